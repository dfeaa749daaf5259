"""Exceptions raised by tenferro: one class per family of the C++ library's error codes.

Every exception is a ``tenferro.Error`` carrying ``code`` (the library's error code, e.g.
``"shape_mismatch"``), ``stage`` (``"usage"``, ``"prepare"``, ...) and ``op`` (the
operation that failed), and also subclasses the built-in exception a numpy user would
catch: ``ValueError`` for bad values and shapes, ``TypeError`` for dtypes,
``NotImplementedError`` for unsupported requests, ``MemoryError`` for allocation failures.
"""


class Error(Exception):
    """Base class of every tenferro error."""

    def __init__(self, message, code=None, stage=None, op=None):
        super().__init__(message)
        self.code = code
        self.stage = stage
        self.op = op


class InvalidArgumentError(Error, ValueError):
    """A malformed argument: subscripts, paths, axes, layouts, sizes."""


class ShapeError(InvalidArgumentError):
    """Operand shapes that disagree, or an invalid shape."""


class DTypeError(Error, TypeError):
    """A dtype the operation does not accept, or operands of different dtypes."""


class UnsupportedError(Error, NotImplementedError):
    """A request the library (or this build) cannot serve."""


class ReadOnlyError(Error, ValueError):
    """A write into read-only or shared memory."""


class LinAlgError(Error, ValueError):
    """A singular or not positive definite matrix, or no convergence."""


class AllocationError(Error, MemoryError):
    """Memory could not be obtained."""


class InternalError(Error, RuntimeError):
    """Anything else (configuration, runtime state, a bug)."""


_BY_CODE = {
    "invalid_argument": InvalidArgumentError,
    "parse": InvalidArgumentError,
    "out_of_range": InvalidArgumentError,
    "overflow": InvalidArgumentError,
    "invalid_permutation": InvalidArgumentError,
    "invalid_layout": InvalidArgumentError,
    "incompatible_layout": InvalidArgumentError,
    "runtime_mismatch": InvalidArgumentError,  # operands of two runtimes: a wrong argument
    "invalid_shape": ShapeError,
    "shape_mismatch": ShapeError,
    "dtype_mismatch": DTypeError,
    "unsupported": UnsupportedError,
    "determinism_unsupported": UnsupportedError,
    "read_only": ReadOnlyError,
    "not_exclusive": ReadOnlyError,
    "singular": LinAlgError,
    "not_positive_definite": LinAlgError,
    "no_convergence": LinAlgError,
    "allocation_failed": AllocationError,
}


def error_class(code):
    """The exception class for a library error code (InternalError when unknown)."""
    return _BY_CODE.get(code, InternalError)
