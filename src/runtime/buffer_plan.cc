// The buffer plan of a prepared program (step 4 of Note [Preparation order]).

#include <algorithm>
#include <limits>
#include <numeric>

#include "prepared.h"

namespace tenferro::runtime {

// Note [Buffer plan]: every value's last use decides when its slot is dropped during a run
// (program outputs are kept), so intermediates that are not planned go back to their
// pool as soon as they are dead. On an engine that plans_buffers(), the outputs of
// writes_into() kernels additionally get workspace buffers: storage a prepared program's
// workspace allocates once (first execution with that workspace) and keeps, so a warm
// execution allocates no intermediate at all.
// - Aliasing: a view kernel's outputs share its first input's storage; any other kernel
//   that does not write into a destination may return outputs sharing any input's storage
//   (conservatively). Values that may share storage form one alias class (union-find);
//   a class's buffer lives until the last use of any member.
// - A class that holds a program output or a program input is never planned: outputs
//   must not live in storage the next execution overwrites, and inputs are the caller's.
// - Reuse: buffers are assigned in schedule order; a buffer is free again after the node
//   where its class dies (best fit by capacity, else the largest free one grows, else a
//   new buffer).
// - Donation of internal values: when a writes_into() kernel's input is the planned value
//   itself (not a view of it), dies at this node, has the output's dtype and shape, no
//   other input of the node shares its storage (a view of it read in another order), and
//   the kernel accepts it in place (in_place_ok), the output takes over its buffer.
// - Donation of arguments: only arguments declared in PrepareOptions::donate_arguments,
//   under the same conditions, for outputs that get no workspace buffer (typically
//   program outputs: `x_next = x + dx` in place of x). Whether it happens is decided per
//   execution: the argument must be the only handle to its storage when it is passed, be
//   writable, and have the compact layout; otherwise the kernel allocates as usual.
// The peak of live bytes is estimated by simulating the release order (views count
// nothing); the workspace bytes are the sum of buffer capacities.

namespace {


struct UnionFind {
  std::vector<int32_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), 0); }
  int32_t find(int32_t v) {
    while (parent[static_cast<size_t>(v)] != v) {
      parent[static_cast<size_t>(v)] = parent[static_cast<size_t>(parent[static_cast<size_t>(v)])];
      v = parent[static_cast<size_t>(v)];
    }
    return v;
  }
  void unite(int32_t a, int32_t b) {
    a = find(a), b = find(b);
    if (a != b) parent[static_cast<size_t>(std::max(a, b))] = std::min(a, b);
  }
};

}  // namespace

void plan_buffers(PreparedProgram& p, std::span<const int32_t> donate_arguments, bool engine_plans_buffers) {
  const size_t nv = p.value_shapes.size();
  const auto nn = static_cast<int32_t>(p.nodes.size());
  p.defined_at.assign(nv, -1);
  p.last_use.assign(nv, -1);
  p.value_buffer.assign(nv, -1);
  std::vector<bool> is_output(nv, false), is_input(nv, false);
  for (int32_t v : p.output_values) is_output[static_cast<size_t>(v)] = true;
  for (int32_t v : p.argument_values) is_input[static_cast<size_t>(v)] = true;
  for (int32_t v : p.binding_values) is_input[static_cast<size_t>(v)] = true;
  for (int32_t i = 0; i < nn; ++i) {
    for (int32_t v : p.nodes[static_cast<size_t>(i)].inputs) p.last_use[static_cast<size_t>(v)] = i;
    for (int32_t v : p.nodes[static_cast<size_t>(i)].outputs) p.defined_at[static_cast<size_t>(v)] = i;
  }

  // Release lists and the peak estimate.
  int64_t live = 0;
  std::vector<int64_t> owned(nv, 0);
  for (int32_t i = 0; i < nn; ++i) {
    PreparedNode& n = p.nodes[static_cast<size_t>(i)];
    for (int32_t v : n.outputs) {
      const auto u = static_cast<size_t>(v);
      owned[u] = n.view ? 0 : bytes_of(p.value_dtypes[u], p.value_shapes[u]);
      live = sat_add(live, owned[u]);
      if (!is_output[u] && p.last_use[u] < 0) n.release.push_back(v);  // dead at birth
    }
    p.peak_bytes = std::max(p.peak_bytes, live);
    for (int32_t v : n.inputs) {
      const auto u = static_cast<size_t>(v);
      if (p.last_use[u] == i && !is_output[u] && std::find(n.release.begin(), n.release.end(), v) == n.release.end()) {
        n.release.push_back(v);
        live = sat_sub_term(live, owned[u]);
      }
    }
    for (int32_t v : n.release) {
      if (p.last_use[static_cast<size_t>(v)] < 0) live = sat_sub_term(live, owned[static_cast<size_t>(v)]);
    }
  }

  p.donatable.assign(p.argument_values.size(), 0);
  if (!engine_plans_buffers) return;

  // Alias classes, their end of life, and whether they are pinned.
  UnionFind uf(nv);
  for (const PreparedNode& n : p.nodes) {
    const bool into = n.kernel->writes_into() && n.outputs.size() == 1;
    if (into) continue;
    const size_t sources = n.view ? std::min<size_t>(n.inputs.size(), 1) : n.inputs.size();
    for (int32_t o : n.outputs) {
      for (size_t k = 0; k < sources; ++k) uf.unite(o, n.inputs[k]);
    }
  }
  std::vector<int32_t> end(nv, -1);
  std::vector<bool> pinned(nv, false);
  for (size_t v = 0; v < nv; ++v) {
    const auto c = static_cast<size_t>(uf.find(static_cast<int32_t>(v)));
    end[c] = std::max({end[c], p.last_use[v], p.defined_at[v]});
    if (is_output[v] || is_input[v]) pinned[c] = true;
  }
  const auto class_end = [&](int32_t v) { return end[static_cast<size_t>(uf.find(v))]; };
  // In place of input u only when no other input of the node shares u's storage (e.g. a
  // transposed view of u read while u is overwritten).
  const auto sole_alias = [&](const PreparedNode& n, int32_t u) {
    for (int32_t w : n.inputs) {
      if (w != u && uf.find(w) == uf.find(u)) return false;
    }
    return true;
  };
  const auto is_pinned = [&](int32_t v) { return pinned[static_cast<size_t>(uf.find(v))]; };
  std::vector<int32_t> argument_index(nv, -1);
  for (int32_t k : donate_arguments) {
    argument_index[static_cast<size_t>(p.argument_values[static_cast<size_t>(k)])] = k;
  }

  std::vector<int32_t> owner;          // per buffer: the value whose class holds it now
  std::vector<bool> is_free;           // per buffer
  std::vector<int32_t> free_buffers;   // buffers free for the next assignment
  std::vector<std::vector<int32_t>> dies_at(p.nodes.size());  // buffers to free after node i
  for (int32_t i = 0; i < nn; ++i) {
    PreparedNode& n = p.nodes[static_cast<size_t>(i)];
    // Planned buffers come from the program's engine (PreparedProgram::acquire): nodes
    // placed on another engine allocate their own outputs.
    if (n.kernel->writes_into() && n.outputs.size() == 1 && n.engine == p.engine.value) {
      const int32_t v = n.outputs[0];
      const auto uv = static_cast<size_t>(v);
      const auto same_type = [&](int32_t u) {
        return p.value_dtypes[static_cast<size_t>(u)] == p.value_dtypes[uv] &&
               p.value_shapes[static_cast<size_t>(u)] == p.value_shapes[uv];
      };
      if (!is_pinned(v)) {
        int32_t buf = -1;
        for (size_t k = 0; k < n.inputs.size() && buf < 0; ++k) {
          const int32_t u = n.inputs[k];
          const int32_t b = p.value_buffer[static_cast<size_t>(u)];
          if (b >= 0 && owner[static_cast<size_t>(b)] == u && class_end(u) == i && same_type(u) &&
              n.kernel->in_place_ok(k) && sole_alias(n, u)) {
            buf = b;
            n.in_place_of = u;
          }
        }
        const int64_t need = bytes_of(p.value_dtypes[uv], p.value_shapes[uv]);
        if (buf < 0 && !free_buffers.empty()) {
          auto best = free_buffers.end();
          for (auto it = free_buffers.begin(); it != free_buffers.end(); ++it) {
            const int64_t cap = p.buffer_bytes[static_cast<size_t>(*it)];
            if (cap >= need && (best == free_buffers.end() || cap < p.buffer_bytes[static_cast<size_t>(*best)])) best = it;
          }
          if (best == free_buffers.end()) {
            best = std::max_element(free_buffers.begin(), free_buffers.end(), [&](int32_t a, int32_t b) {
              return p.buffer_bytes[static_cast<size_t>(a)] < p.buffer_bytes[static_cast<size_t>(b)];
            });
          }
          buf = *best;
          free_buffers.erase(best);
          is_free[static_cast<size_t>(buf)] = false;
        }
        if (buf < 0) {
          buf = static_cast<int32_t>(p.buffer_bytes.size());
          p.buffer_bytes.push_back(0);
          owner.push_back(-1);
          is_free.push_back(false);
        }
        p.buffer_bytes[static_cast<size_t>(buf)] = std::max(p.buffer_bytes[static_cast<size_t>(buf)], need);
        owner[static_cast<size_t>(buf)] = v;
        p.value_buffer[uv] = buf;
        n.dest_buffer = buf;
        dies_at[static_cast<size_t>(class_end(v))].push_back(buf);
      } else {
        for (size_t k = 0; k < n.inputs.size(); ++k) {
          const int32_t u = n.inputs[k];
          const int32_t arg = argument_index[static_cast<size_t>(u)];
          // The argument's whole class (it and its views) dies here, and it is not itself
          // (a view of) a program output.
          if (arg >= 0 && class_end(u) == i && same_type(u) && n.kernel->in_place_ok(k) && sole_alias(n, u) &&
              p.donatable[static_cast<size_t>(arg)] == 0) {
            bool output_alias = false;
            for (int32_t o : p.output_values) output_alias = output_alias || (o != v && uf.find(o) == uf.find(u));
            if (output_alias) continue;
            n.donate_argument = arg;
            p.donatable[static_cast<size_t>(arg)] = 1;
            break;
          }
        }
      }
    }
    // Free the buffers whose current holder's class dies here (a buffer handed on in
    // place at this node has a new holder that lives on).
    for (int32_t b : dies_at[static_cast<size_t>(i)]) {
      const auto ub = static_cast<size_t>(b);
      if (!is_free[ub] && class_end(owner[ub]) == i) {
        is_free[ub] = true;
        free_buffers.push_back(b);
      }
    }
  }
  for (int64_t b : p.buffer_bytes) p.workspace_bytes = sat_add(p.workspace_bytes, b);
}

}  // namespace tenferro::runtime
