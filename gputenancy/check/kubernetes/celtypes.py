"""DRA CEL selectors type-checked as the API server compiles them.

The API server compiles every DeviceClass and ResourceClaim(Template) selector with the DRA CEL
environment (k8s.io/dynamic-resource-allocation/cel, `compile.go`) and type checks it: one variable,
`device`, an object with `driver` (string), `allowMultipleAllocations` (bool), `attributes` (map of
domain -> map of name -> typed value: int, bool, string or semver, hence `dyn`) and `capacity` (map
of domain -> map of name -> Quantity); the Kubernetes CEL libraries (quantity, semver, regex, lists,
URLs, IP/CIDR) and cel-go's strings, bindings and optional extensions; and the result must be a bool.

Type checking here uses cel-expr-python (the CEL C++ checker), with `device` declared as a message
type built from a protobuf descriptor at first use. Messages cannot hold a map of maps of a type
that is not JSON, so capacity values are `dyn` here (the API server knows them as Quantity): a
selector that compares a capacity with an int passes here and is refused there. Error text follows
the API server's first line (`compilation failed: ERROR: <input>:1:7: undefined field 'atributes'`;
the API server adds the expression and a caret line under it).
"""

from __future__ import annotations

import functools
import re
from typing import Any

_DEVICE = "kubernetes.DRADevice"
_STRUCT = ".google.protobuf.Struct"
_QUANTITY = "kubernetes.Quantity"
_SEMVER = "kubernetes.Semver"
_URL = "kubernetes.URL"
_IP = "net.IP"
_CIDR = "net.CIDR"


def _descriptor_pool() -> Any:
    from google.protobuf import descriptor_pb2, descriptor_pool, struct_pb2

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(
        name="gputenancy/dra.proto", package="kubernetes", syntax="proto3"
    )
    file.dependency.append("google/protobuf/struct.proto")
    device = file.message_type.add(name="DRADevice")
    string, boolean, message, optional, repeated = 9, 8, 11, 1, 3
    device.field.add(name="driver", number=1, type=string, label=optional)
    device.field.add(name="allowMultipleAllocations", number=2, type=boolean, label=optional)
    for number, name in ((3, "attributes"), (4, "capacity")):
        entry = device.nested_type.add(name=f"{name.capitalize()}Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=string, label=optional)
        entry.field.add(name="value", number=2, type=message, label=optional, type_name=_STRUCT)
        device.field.add(
            name=name,
            number=number,
            type=message,
            label=repeated,
            type_name=f".kubernetes.DRADevice.{entry.name}",
        )
    pool.Add(file)
    return pool


def _functions(cel: Any) -> list[Any]:
    T = cel.Type
    S, B, N, D, DYN = T.STRING, T.BOOL, T.INT, T.DOUBLE, T.DYN
    Q, V, U, IP, CIDR = (T.AbstractType(n) for n in (_QUANTITY, _SEMVER, _URL, _IP, _CIDR))
    LIST = T.List(DYN)

    def fn(name: str, *overloads: tuple[str, Any, list[Any], bool]) -> Any:
        return cel.FunctionDecl(
            name,
            [
                cel.Overload(oid, return_type=ret, parameters=params, is_member=member)
                for oid, ret, params, member in overloads
            ],
        )

    return [
        # k8s.io/apiserver/pkg/cel/library/quantity.go
        fn("quantity", ("string_to_quantity", Q, [S], False)),
        fn("isQuantity", ("is_quantity_string", B, [S], False)),
        fn("isInteger", ("quantity_is_integer", B, [Q], True)),
        fn("asInteger", ("quantity_get_integer", N, [Q], True)),
        fn("asApproximateFloat", ("quantity_get_float", D, [Q], True)),
        fn("sign", ("quantity_sign", N, [Q], True)),
        fn("add", ("quantity_add", Q, [Q, Q], True), ("quantity_add_int", Q, [Q, N], True)),
        fn("sub", ("quantity_sub", Q, [Q, Q], True), ("quantity_sub_int", Q, [Q, N], True)),
        fn(
            "isLessThan",
            ("quantity_less", B, [Q, Q], True),
            ("semver_less", B, [V, V], True),
        ),
        fn(
            "isGreaterThan",
            ("quantity_greater", B, [Q, Q], True),
            ("semver_greater", B, [V, V], True),
        ),
        fn(
            "compareTo",
            ("quantity_compare_to", N, [Q, Q], True),
            ("semver_compare_to", N, [V, V], True),
        ),
        # k8s.io/apiserver/pkg/cel/library/semverlib.go
        fn("semver", ("string_to_semver", V, [S], False), ("string_bool_to_semver", V, [S, B], False)),
        fn("isSemver", ("is_semver_string", B, [S], False), ("is_semver_string_bool", B, [S, B], False)),
        fn("major", ("semver_major", N, [V], True)),
        fn("minor", ("semver_minor", N, [V], True)),
        fn("patch", ("semver_patch", N, [V], True)),
        # library/regex.go
        fn("find", ("string_find_string", S, [S, S], True)),
        fn(
            "findAll",
            ("string_find_all_string", T.List(S), [S, S], True),
            ("string_find_all_string_int", T.List(S), [S, S, N], True),
        ),
        # library/lists.go (element types as dyn; indexOf/lastIndexOf on lists are not declared: the
        # strings extension owns those names here)
        fn("isSorted", ("list_is_sorted", B, [LIST], True)),
        fn("sum", ("list_sum", DYN, [LIST], True)),
        fn("min", ("list_min", DYN, [LIST], True)),
        fn("max", ("list_max", DYN, [LIST], True)),
        # library/urls.go
        fn("url", ("string_to_url", U, [S], False)),
        fn("isURL", ("is_url_string", B, [S], False)),
        *(
            fn(m, (f"url_{m}", S, [U], True))
            for m in ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath")
        ),
        fn("getQuery", ("url_get_query", T.Map(S, T.List(S)), [U], True)),
        # library/ip.go, library/cidr.go
        fn("ip", ("string_to_ip", IP, [S], False), ("cidr_ip", IP, [CIDR], True)),
        fn("isIP", ("is_ip", B, [S], False)),
        fn("cidr", ("string_to_cidr", CIDR, [S], False)),
        fn("isCIDR", ("is_cidr", B, [S], False)),
        fn("family", ("ip_family", N, [IP], True)),
        fn(
            "containsIP",
            ("cidr_contains_ip_ip", B, [CIDR, IP], True),
            ("cidr_contains_ip_string", B, [CIDR, S], True),
        ),
        fn(
            "containsCIDR",
            ("cidr_contains_cidr", B, [CIDR, CIDR], True),
            ("cidr_contains_cidr_string", B, [CIDR, S], True),
        ),
        fn("prefixLength", ("cidr_prefix_length", N, [CIDR], True)),
        fn("masked", ("cidr_masked", CIDR, [CIDR], True)),
        *(
            fn(m, (f"ip_{m}", B, [IP], True))
            for m in (
                "isUnspecified",
                "isLoopback",
                "isLinkLocalMulticast",
                "isLinkLocalUnicast",
                "isGlobalUnicast",
                "isCanonical",
            )
        ),
    ]


@functools.cache
def _environment() -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

    return cel.NewEnv(
        _descriptor_pool(),
        variables={"device": cel.Type(_DEVICE)},
        extensions=[ext_strings.ExtStrings(), ext_bindings.ExtBindings(), ext_optional.ExtOptional()],
        functions=_functions(cel),
    )


_STATUS = re.compile(r"^[A-Z_]+: |\s*\[[A-Z_]+\]$")
_STRUCT_NOTE = re.compile(r" not found in struct '[^']*'")


@functools.lru_cache(maxsize=4096)
def type_error(expression: str) -> str | None:
    """The API server's reason to refuse `expression` as a DRA selector, or None when it type checks."""
    environment = _environment()
    try:
        compiled = environment.compile(expression)
    except (RuntimeError, ValueError) as exc:
        # the first line: `ERROR: <input>:LINE:COL: reason`; the API server adds the expression and a
        # caret line, which a one-line finding leaves out (the column says the same)
        text = _STRUCT_NOTE.sub("", _STATUS.sub("", str(exc).strip().splitlines()[0]))
        return f"compilation failed: {text}"
    result = compiled.return_type().name()
    if result not in ("bool", "dyn", "BOOL", "DYN"):
        return f"must evaluate to bool, not {result.lower()}"
    return None
