"""The errors nqprof raises. Each carries a one-line message meant for the user."""


class NqprofError(Exception):
    """Base class: anything nqprof reports as a clean, one-line failure."""


class InputError(NqprofError, ValueError):
    """A bad N, strategy, parameter or option value. The CLI exits with code 2."""


class UnavailableError(NqprofError):
    """The run needs something this machine lacks (a GPU, PyCUDA, a toolkit)."""


class CountMismatchError(NqprofError):
    """A strategy returned a count that differs from the known count."""


class DeviceFailureError(NqprofError):
    """The device reported failed launches or allocations: the count cannot be trusted."""


class WatchdogError(NqprofError):
    """A run hung past its timeout or its worker process died."""


class BuildError(NqprofError):
    """nvcc or the device linker rejected a kernel source (the message quotes its first
    error lines)."""


class LimitError(NqprofError):
    """What was asked for lies past a limit of the device or its runtime (a measurement
    states the limit instead of a number)."""
