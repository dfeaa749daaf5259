"""A small evaluator of StableHLO modules in MLIR's generic op form, written with numpy
from the StableHLO specification (https://openxla.org/stablehlo/spec): the independent
oracle of tenferro's StableHLO lowering (tests/xla/check_stablehlo.py,
python/tests/test_stablehlo.py). It reads the subset of the syntax that
tenferro.xla writes — one op per line, reduction bodies of one op, sort comparators of a
few scalar ops — and checks every op's result shape and element type against the type
written in the text.

    module = parse(text); outputs = evaluate(module, [numpy arrays])
"""

import functools
import re
import struct

import numpy as np

_DTYPES = {"f64": np.float64, "f32": np.float32, "i64": np.int64, "i32": np.int32, "i1": np.bool_,
           "complex<f64>": np.complex128, "complex<f32>": np.complex64}


def parse_type(text):
    m = re.fullmatch(r"tensor<((?:\d+x)*)(.+)>", text.strip())
    if not m:
        raise ValueError(f"not a tensor type: {text!r}")
    dims = tuple(int(d) for d in m.group(1).split("x") if d)
    return dims, np.dtype(_DTYPES[m.group(2)])


def _split_top(text, sep=","):
    """Splits at `sep` outside brackets and parentheses."""
    parts, depth, cur = [], 0, ""
    for c in text:
        if c in "[(<":
            depth += 1
        elif c in "])>":
            depth -= 1
        if c == sep and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _scalar(tok, dtype):
    tok = tok.strip()
    if dtype.kind == "c":
        re_, im = _split_top(tok.strip()[1:-1])
        part = np.dtype(np.float64 if dtype == np.complex128 else np.float32)
        return complex(_scalar(re_, part), _scalar(im, part))
    if tok in ("true", "false"):
        return tok == "true"
    if tok.startswith("0x"):
        bits = int(tok, 16)
        if dtype == np.float64:
            return struct.unpack("<d", struct.pack("<Q", bits))[0]
        if dtype == np.float32:
            return struct.unpack("<f", struct.pack("<I", bits))[0]
        return bits
    if dtype.kind == "f":
        if "." not in tok:
            raise ValueError(f"MLIR float literal without '.': {tok!r}")
        return float(tok)
    return int(tok)


def parse_dense(text):
    """`dense<...> : tensor<...>` -> numpy array."""
    m = re.fullmatch(r"dense<(.*)>\s*:\s*(tensor<.*>)", text.strip())
    if not m:
        raise ValueError(f"not a dense literal: {text!r}")
    shape, dtype = parse_type(m.group(2))
    body = m.group(1).strip()
    if body == "":
        return np.zeros(shape, dtype)
    if not body.startswith("["):
        return np.full(shape, _scalar(body, dtype), dtype)

    def nested(t):
        t = t.strip()
        if t.startswith("["):
            return [nested(p) for p in _split_top(t[1:-1])]
        return _scalar(t, dtype)

    a = np.array(nested(body), dtype=dtype)
    if a.shape != shape:
        raise ValueError(f"dense literal of shape {a.shape} for type {shape}")
    return a


def _attrs(text):
    """`a = 1 : i64, b = array<i64: 1, 2>, c = #stablehlo.dot<x = [1]>` -> dict of strings."""
    out = {}
    for part in _split_top(text or ""):
        k, v = part.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def _i64s(v):
    m = re.fullmatch(r"array<i64(?::(.*))?>", v.strip())
    return [int(x) for x in (m.group(1) or "").split(",") if x.strip()]


def _fields(v):
    """#stablehlo.gather<a = [1, 2], b = 3> -> {a: [1, 2], b: 3}."""
    inner = v[v.index("<") + 1:v.rindex(">")]
    out = {}
    for part in _split_top(inner):
        k, val = part.split("=", 1)
        val = val.strip()
        out[k.strip()] = [int(x) for x in val[1:-1].split(",") if x.strip()] if val.startswith("[") else int(val)
    return out


def _enum(v):
    return v.strip().rstrip(">").split()[-1]


_OP = re.compile(r'^\s*(%\w+)(?::(\d+))? = "stablehlo\.(\w+)"\(([^)]*)\)(.*)$')
_TAIL = re.compile(r'^(?: \{(.*)\})? : \((.*)\) -> (tensor<.*>|\(.*\))$')


def _result_types(text):
    if text.startswith("("):
        return [parse_type(t) for t in _split_top(text[1:-1])]
    return [parse_type(text)]


def _op_line(line):
    """One op line without a region: dict(name, count, op, operands, attrs, types)."""
    m = _OP.match(line)
    if not m:
        return None
    name, count, op, operands, rest = m.groups()
    t = _TAIL.match(rest)
    if not t:
        raise ValueError(f"cannot read op line: {line!r}")
    return dict(name=name, count=int(count or 1), op=op, operands=[o.strip() for o in operands.split(",") if o.strip()],
                attrs=_attrs(t.group(1)), types=_result_types(t.group(3)))


def parse(text):
    """The module's function: (argument types, ops, returned names)."""
    lines = text.splitlines()
    fn = next(l for l in lines if "func.func" in l)
    args = re.findall(r"(%arg\d+): (tensor<(?:[^<>]|<[^<>]*>)*>)", fn)
    ops, ret, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if '"func.return"' in line:
            ret = [n.strip() for n in re.search(r'"func.return"\(([^)]*)\)', line).group(1).split(",") if n.strip()]
            continue
        m = _OP.match(line)
        if not m:
            continue
        name, count, op, operands, rest = m.groups()
        region = None
        if rest.startswith(" ({"):
            # ^bb0(block arguments), scalar ops, "stablehlo.return"(value), then })TAIL.
            block = re.findall(r"(%\w+): tensor<", lines[i])
            body = []
            i += 1
            while '"stablehlo.return"' not in lines[i]:
                inner = _op_line(lines[i])
                assert inner, lines[i]
                body.append(inner)
                i += 1
            returned = re.search(r'"stablehlo.return"\((%\w+)\)', lines[i]).group(1)
            rest = lines[i + 1].strip()
            assert rest.startswith("})"), rest
            rest = rest[2:]
            i += 2
            region = dict(args=block, ops=body, ret=returned)
        o = _op_line(f"{name}{':' + count if count else ''} = \"stablehlo.{op}\"({operands}){rest}")
        # Reduction bodies of one op on the two block arguments are named by that op.
        o["body"] = region["ops"][0]["op"] if region and len(region["ops"]) == 1 and len(region["args"]) == 2 \
            and region["ops"][0]["operands"] == region["args"] else None
        o["region"] = region
        o["type"] = o["types"][0]
        ops.append(o)
    return dict(args=args, ops=ops, ret=ret)


def _trunc_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _sign(x):
    if x.dtype.kind == "c":
        a = np.abs(x)
        return np.where(a == 0, 0, x / np.where(a == 0, 1, a)).astype(x.dtype)
    return np.sign(x)


_UNARY = {"negate": np.negative, "abs": np.abs, "sign": _sign, "exponential": np.exp, "log": np.log,
          "exponential_minus_one": np.expm1, "log_plus_one": np.log1p, "sine": np.sin, "cosine": np.cos,
          "tanh": np.tanh, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x), "real": np.real, "imag": np.imag,
          "not": np.logical_not}
_BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply, "power": np.power,
           "maximum": np.maximum, "minimum": np.minimum, "complex": lambda a, b: a + 1j * b,
           "and": np.logical_and, "or": np.logical_or,
           "divide": lambda a, b: _trunc_div(a, b) if a.dtype.kind == "i" else a / b,
           "remainder": np.fmod, "atan2": np.arctan2}
_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal, "GT": np.greater,
            "GE": np.greater_equal}
_REDUCERS = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
             "or": np.logical_or}


def _pad(x, v, low, high, interior):
    shape = [d + (d - 1) * k if d > 0 else 0 for d, k in zip(x.shape, interior)]
    y = np.full(shape, v, x.dtype)
    y[tuple(slice(None, None, k + 1) for k in interior)] = x
    y = np.pad(y, [(max(l, 0), max(h, 0)) for l, h in zip(low, high)], constant_values=v)
    return y[tuple(slice(max(-l, 0), y.shape[a] - max(-h, 0)) for a, (l, h) in enumerate(zip(low, high)))]


def _index_vector(indices, batch_index, ivd):
    idx = list(batch_index)
    if ivd < indices.ndim:
        idx.insert(ivd, slice(None))
        return [int(v) for v in indices[tuple(idx)]]
    return [int(indices[tuple(idx)])]


def _gather(x, indices, dn, slice_sizes):
    offset_dims, collapsed = dn.get("offset_dims", []), dn.get("collapsed_slice_dims", [])
    start_map, ivd = dn["start_index_map"], dn["index_vector_dim"]
    batch_shape = [d for k, d in enumerate(indices.shape) if k != ivd]
    offset_sizes = [s for k, s in enumerate(slice_sizes) if k not in collapsed]
    rank = len(batch_shape) + len(offset_sizes)
    shape, bi, oi = [], iter(batch_shape), iter(offset_sizes)
    for d in range(rank):
        shape.append(next(oi) if d in offset_dims else next(bi))
    out = np.zeros(shape, x.dtype)
    window_axes = [k for k in range(x.ndim) if k not in collapsed]
    for r in np.ndindex(*shape):
        batch = [r[d] for d in range(rank) if d not in offset_dims]
        s = _index_vector(indices, batch, ivd)
        start = [0] * x.ndim
        for k, od in enumerate(start_map):
            start[od] = s[k]
        start = [min(max(v, 0), x.shape[d] - slice_sizes[d]) for d, v in enumerate(start)]
        full = list(start)
        for k, d in enumerate(offset_dims):
            full[window_axes[k]] += r[d]
        out[r] = x[tuple(full)]
    return out


def _scatter(x, indices, updates, dn, body):
    window_dims, inserted = dn.get("update_window_dims", []), dn.get("inserted_window_dims", [])
    to_operand, ivd = dn["scatter_dims_to_operand_dims"], dn["index_vector_dim"]
    out = x.copy()
    window_axes = [k for k in range(x.ndim) if k not in inserted]
    f = _REDUCERS[body]
    for u in np.ndindex(*updates.shape):
        batch = [u[d] for d in range(updates.ndim) if d not in window_dims]
        s = _index_vector(indices, batch, ivd)
        full = [0] * x.ndim
        for k, od in enumerate(to_operand):
            full[od] = s[k]
        for k, d in enumerate(window_dims):
            full[window_axes[k]] += u[d]
        if all(0 <= v < n for v, n in zip(full, x.shape)):
            out[tuple(full)] = f(out[tuple(full)], updates[u])
    return out


def _dot_general(a, b, dn):
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    la, lb = [None] * a.ndim, [None] * b.ndim
    batch = []
    for i, j in zip(dn.get("lhs_batching_dimensions", []), dn.get("rhs_batching_dimensions", [])):
        la[i] = lb[j] = c = next(letters)
        batch.append(c)
    for i, j in zip(dn.get("lhs_contracting_dimensions", []), dn.get("rhs_contracting_dimensions", [])):
        la[i] = lb[j] = next(letters)
    free_a = [la.__setitem__(k, next(letters)) or la[k] for k in range(a.ndim) if la[k] is None]
    free_b = [lb.__setitem__(k, next(letters)) or lb[k] for k in range(b.ndim) if lb[k] is None]
    spec = "".join(la) + "," + "".join(lb) + "->" + "".join(batch + free_a + free_b)
    return np.einsum(spec, a, b)


def _fft(x, kind, lengths):
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    if kind == "FFT":
        return np.fft.fftn(x, axes=axes)
    if kind == "IFFT":
        return np.fft.ifftn(x, axes=axes)
    if kind == "RFFT":
        return np.fft.rfftn(x, axes=axes)
    return np.fft.irfftn(x, s=lengths, axes=axes)


def _comparator(region):
    """The region as a less-than of two positions of the sorted operands' lines."""
    def less(lines, i, j):
        env = {}
        for k, line in enumerate(lines):
            env[region["args"][2 * k]] = np.asarray(line[i])
            env[region["args"][2 * k + 1]] = np.asarray(line[j])
        for o in region["ops"]:
            env[o["name"]] = np.asarray(_eval_op(dict(o, type=o["types"][0]), [env[n] for n in o["operands"]]))
        return bool(env[region["ret"]])
    return less


def _sort(xs, dim, region):
    # Every line along `dim` reordered by the comparator (a stable sort: Python's sorted
    # keeps equal elements in order); all operands move together.
    less = _comparator(region)
    moved = [np.moveaxis(x, dim, -1) for x in xs]
    out = [np.empty_like(m) for m in moved]
    for idx in np.ndindex(*moved[0].shape[:-1]):
        lines = [m[idx] for m in moved]
        n = lines[0].shape[0]
        order = sorted(range(n), key=functools.cmp_to_key(
            lambda i, j: -1 if less(lines, i, j) else (1 if less(lines, j, i) else 0)))
        for m, o in zip(lines, out):
            o[idx] = m[order]
    return tuple(np.moveaxis(o, -1, dim) for o in out)


def _eval_op(o, xs):
    op, a = o["op"], o["attrs"]
    shape, dtype = o["type"]
    x = xs[0] if xs else None
    if op in _UNARY:
        return _UNARY[op](x)
    if op in _BINARY:
        return _BINARY[op](xs[0], xs[1])
    if op == "compare":
        return _COMPARE[_enum(a["comparison_direction"])](xs[0], xs[1])
    if op == "select":
        return np.where(xs[0], xs[1], xs[2])
    if op == "clamp":
        return np.minimum(np.maximum(xs[1], xs[0]), xs[2])
    if op == "convert":
        return x.astype(dtype)
    if op == "constant":
        return parse_dense(a["value"])
    if op == "iota":
        d = int(a["iota_dimension"].split(":")[0])
        v = np.arange(shape[d]).reshape([-1 if k == d else 1 for k in range(len(shape))])
        return np.broadcast_to(v, shape)
    if op == "broadcast_in_dim":
        dims = _i64s(a["broadcast_dimensions"])
        view = [1] * len(shape)
        for i, d in enumerate(dims):
            view[d] = x.shape[i]
        return np.broadcast_to(x.reshape(view), shape)
    if op == "reshape":
        return x.reshape(shape)
    if op == "transpose":
        return np.transpose(x, _i64s(a["permutation"]))
    if op == "reverse":
        return np.flip(x, tuple(_i64s(a["dimensions"])))
    if op == "slice":
        s, l, t = _i64s(a["start_indices"]), _i64s(a["limit_indices"]), _i64s(a["strides"])
        return x[tuple(slice(*v) for v in zip(s, l, t))]
    if op == "dynamic_slice":
        sizes = _i64s(a["slice_sizes"])
        st = [min(max(int(v), 0), n - z) for v, n, z in zip(xs[1:], x.shape, sizes)]
        return x[tuple(slice(b, b + z) for b, z in zip(st, sizes))]
    if op == "dynamic_update_slice":
        u = xs[1]
        st = [min(max(int(v), 0), n - z) for v, n, z in zip(xs[2:], x.shape, u.shape)]
        y = x.copy()
        y[tuple(slice(b, b + z) for b, z in zip(st, u.shape))] = u
        return y
    if op == "concatenate":
        return np.concatenate(xs, axis=int(a["dimension"].split(":")[0]))
    if op == "pad":
        return _pad(x, xs[1][()], _i64s(a["edge_padding_low"]), _i64s(a["edge_padding_high"]),
                    _i64s(a["interior_padding"]))
    if op == "gather":
        return _gather(x, xs[1], _fields(a["dimension_numbers"]), _i64s(a["slice_sizes"]))
    if op == "scatter":
        return _scatter(x, xs[1], xs[2], _fields(a["scatter_dimension_numbers"]), o["body"])
    if op == "reduce":
        f, init = _REDUCERS[o["body"]], xs[1][()]
        return f.reduce(x, axis=tuple(_i64s(a["dimensions"])), initial=init)
    if op == "dot_general":
        return _dot_general(xs[0], xs[1], _fields(a["dot_dimension_numbers"]))
    if op == "sort":
        return _sort(xs, int(a["dimension"].split(":")[0]), o["region"])
    if op == "fft":
        return _fft(x, _enum(a["fft_type"]), _i64s(a["fft_length"]))
    raise NotImplementedError(f"stablehlo.{op}")


def evaluate(module, args):
    """Runs the module's function on numpy arrays; returns its results."""
    if len(args) != len(module["args"]):
        raise ValueError(f"{len(module['args'])} arguments expected, got {len(args)}")
    env = {}
    for (name, t), v in zip(module["args"], args):
        shape, dtype = parse_type(t)
        v = np.asarray(v)
        if v.shape != shape or v.dtype != dtype:
            raise ValueError(f"argument {name}: {v.dtype}{v.shape} for {t}")
        env[name] = v
    with np.errstate(all="ignore"):
        for o in module["ops"]:
            r = _eval_op(o, [env[n] for n in o["operands"]])
            results = list(r) if o["count"] > 1 else [r]
            for k, (v, (shape, dtype)) in enumerate(zip(results, o["types"])):
                v = np.asarray(v)
                if v.shape != shape:
                    raise AssertionError(f"{o['name']} stablehlo.{o['op']}: result shape {v.shape}, text says {shape}")
                if v.dtype != dtype and not (np.can_cast(v.dtype, dtype, "same_kind") or o["op"] in ("iota", "fft")):
                    raise AssertionError(f"{o['name']} stablehlo.{o['op']}: result {v.dtype}, text says {dtype}")
                env[o["name"] if o["count"] == 1 else f"{o['name']}#{k}"] = v.astype(dtype)
    return [env[n] for n in module["ret"]]
