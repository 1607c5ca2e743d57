"""Feature dtypes with Feast's names (feast.types): Float32, Float64, Int32,
Int64, String, Bool, Bytes, UnixTimestamp and Array(<one of these>).

    from strata.features.types import Float32, Int64
    Field(name="conv_rate", dtype=Float32)

Strata's tables have no list columns, so an Array(...) feature is refused by
apply with NotImplementedError (the type itself exists, so Feast definitions
import unchanged)."""

__all__ = ["Float32", "Float64", "Int32", "Int64", "String", "Bool", "Bytes", "UnixTimestamp",
           "Array", "PrimitiveFeastType", "from_strata_type"]


class PrimitiveFeastType:
    """A scalar feature type; `name` is Feast's, which the C++ registry parses."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name

    def __eq__(self, other):
        return isinstance(other, PrimitiveFeastType) and other.name == self.name

    def __hash__(self):
        return hash(self.name)


class Array:
    """A list-valued type, e.g. Array(Float32). Not storable in Strata (see the
    module docstring)."""

    def __init__(self, base_type):
        if not isinstance(base_type, PrimitiveFeastType):
            raise TypeError(f"Array() takes one of the primitive types (Float32, Int64, ...), "
                            f"not {base_type!r}")
        self.base_type = base_type
        self.name = f"Array({base_type.name})"

    def __repr__(self):
        return self.name

    def __eq__(self, other):
        return isinstance(other, Array) and other.base_type == self.base_type

    def __hash__(self):
        return hash(self.name)


Float32 = PrimitiveFeastType("Float32")
Float64 = PrimitiveFeastType("Float64")
Int32 = PrimitiveFeastType("Int32")
Int64 = PrimitiveFeastType("Int64")
String = PrimitiveFeastType("String")
Bool = PrimitiveFeastType("Bool")
Bytes = PrimitiveFeastType("Bytes")
UnixTimestamp = PrimitiveFeastType("UnixTimestamp")

_BY_STRATA = {"float": Float32, "double": Float64, "int32": Int32, "int64": Int64,
              "string": String, "bool": Bool, "binary": Bytes}


def from_strata_type(name):
    """The Feast type of a registry dtype ("float", "timestamp[us]", ...). A
    type Feast has no name for (date) keeps the registry's name."""
    if name.startswith("timestamp"):
        return UnixTimestamp
    return _BY_STRATA.get(name) or PrimitiveFeastType(name)
