--- cell.doc: one-line documentation of cell's functions, classes and modules, as the REPL's `?name` prints it.
--
--     local doc = require "cell.doc"
--     doc.describe(cell.zeros, "cell.zeros")
--     --> "cell.zeros(shape [, dtype])\n  A tensor of zeros of the given shape ..."
--
-- Where the text comes from:
-- - a Lua function: the LDoc comment just above its definition (the lines
--   starting with `--` right above the line `debug.getinfo` gives, from the
--   first one starting with `---`), its first sentence; the signature from
--   its parameter names (without `self` when the name was written `a:b`);
-- - a C function of the engine: the table `doc.C` below, keyed by the
--   function's canonical name (`cell.zeros`, `Tensor:sum`, `cell.ops.conv2d`);
--   an in-place method `Tensor:xxx_` without its own entry is described as
--   the in-place form of `Tensor:xxx`;
-- - a class (cell.class): the first sentence of its file's header comment when
--   it names the class, else its `init`'s comment; the signature is init's;
-- - a module (a table in package.loaded): its file's header comment;
-- - any other value: what it is (a tensor's shape and dtype, a cell's class).
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local core = require "cell.core"
local class = require "cell.class"

local M = {}

--- One-liners for the C functions: [canonical name] = { signature, text }.
M.C = {
  -- creation
  ["cell.tensor"] = { "(data [, dtype])", "A tensor from a number or nested tables of numbers or booleans (float32, or bool for booleans, unless dtype says)." },
  ["cell.zeros"] = { "(shape [, dtype])", "A tensor of zeros of the given shape (a table such as {2, 3}), float32 unless dtype says." },
  ["cell.ones"] = { "(shape [, dtype])", "A tensor of ones of the given shape, float32 unless dtype says." },
  ["cell.full"] = { "(shape, value [, dtype])", "A tensor of the given shape filled with value." },
  ["cell.empty"] = { "(shape [, dtype])", "A tensor of the given shape whose values are not set (NaN for floats)." },
  ["cell.zeros_like"] = { "(t [, dtype])", "A tensor of zeros with t's shape and dtype." },
  ["cell.ones_like"] = { "(t [, dtype])", "A tensor of ones with t's shape and dtype." },
  ["cell.full_like"] = { "(t, value [, dtype])", "A tensor with t's shape and dtype, filled with value." },
  ["cell.arange"] = { "([start,] stop [, step] [, dtype])", "Numbers from start (default 0) up to but not including stop; int64 when every bound is integral, float32 otherwise." },
  ["cell.linspace"] = { "(start, stop, steps [, dtype])", "A 1-D tensor of steps numbers evenly spaced from start to stop, both included." },
  ["cell.eye"] = { "(n [, m] [, dtype])", "The n x m identity matrix (m defaults to n)." },
  ["cell.rand"] = { "(shape [, dtype])", "Uniform random numbers in [0, 1) from the seeded generator (cell.set_seed)." },
  ["cell.randn"] = { "(shape [, dtype])", "Standard normal random numbers from the seeded generator (cell.set_seed)." },
  ["cell.randint"] = { "(low, high, shape [, dtype])", "Random integers in [low, high) from the seeded generator." },
  ["cell.cat"] = { "(tensors [, dim]) | (tensors, {dim =})", "Join a list of tensors along dimension dim (default 1); the other dimensions must agree." },
  ["cell.stack"] = { "(tensors [, dim]) | (tensors, {dim =})", "Stack a list of same-shaped tensors along a new dimension dim (default 1)." },
  ["cell.where"] = { "(cond, a, b)", "Elementwise a where cond is true, else b (a and b may be numbers); broadcasts." },
  -- settings and queries
  ["cell.set_seed"] = { "(n)", "Seed this Lua state's random generator, so rand, randn, randint, dropout and initializers repeat (other states keep theirs)." },
  ["cell.get_rng_state"] = { "()", "The state of this Lua state's random generator, as a uint8 Tensor of 24 bytes." },
  ["cell.set_rng_state"] = { "(state)", "Put back a state from get_rng_state: the draws after it repeat those that followed it." },
  ["Tensor:multinomial"] = { "(num_samples [, replacement | {replacement =, seed =}])", "Category indices (1-based, int64) drawn from the weights of each row." },
  ["Tensor:bernoulli"] = { "([p | {p =, seed =}])", "0 or 1 per element in t's shape and dtype, 1 with probability p (default: t's values)." },
  ["cell.set_num_threads"] = { "(n)", "Bound the threads kernels and OpenBLAS use (1 in a game loop); n is an integer in [1, 1024]." },
  ["cell.get_num_threads"] = { "()", "The number of threads kernels may use." },
  ["cell.set_device"] = { "(name [, device_id])", "Make a registered device (\"CPU\", ...) where new tensors go." },
  ["cell.get_device"] = { "()", "The default device's name and id (\"CPU\", 0)." },
  ["cell.memory_stats"] = { "()", "A table of the allocator's byte counts: in use, peak, cached." },
  ["cell.reset_peak_memory"] = { "()", "Start measuring peak memory from now." },
  ["cell.empty_cache"] = { "()", "Return the allocator's cached free blocks to the system." },
  ["cell.is_tensor"] = { "(x)", "Whether x is a Tensor (a Parameter is one)." },
  ["cell.is_dtype"] = { "(x)", "Whether x is a dtype such as cell.float32." },
  ["cell.promote_types"] = { "(a, b)", "The dtype an op on dtypes a and b computes in (MindSpore's promotion)." },
  ["cell.is_grad_enabled"] = { "()", "Whether ops record the tape for automatic differentiation." },
  ["cell.set_grad_enabled"] = { "(on)", "Turn recording on or off; returns the previous setting." },
  ["cell.gemm_kernel"] = { "()", "Which kernel float32 matrix products run on: \"openblas\", \"cell-avx512\" or \"cell-avx2\"." },
  ["cell.perf_counter"] = { "()", "Seconds on a monotonic wall clock, for timing code." },
  -- files (cell.save_checkpoint, cell.load_checkpoint and cell.dataset build on these)
  ["cell.safetensors_save"] = { "(path, names, tensors [, metadata])", "Write tensors under names to a safetensors file, metadata a table of strings." },
  ["cell.safetensors_load"] = { "(path)", "Read a safetensors file: its names (in file order), tensors and metadata." },
  ["cell.idx_load"] = { "(path [, dtype [, scale]])", "Read an IDX file (MNIST's format) as a tensor of its dtype, or of dtype with values times scale." },
  ["cell.isatty"] = { "(fd)", "Whether descriptor fd (0 stdin, 1 stdout, 2 stderr) is a terminal." },
  ["cell.file_kind"] = { "(path)", "What path names, without opening it: \"file\", \"directory\", \"fifo\", \"other\", or nil when nothing is there." },
  ["Tensor"] = { "", "An n-dimensional array of one dtype on the engine; t:<Tab> lists its methods, ?t:sum documents one." },
  -- tensor properties, lifetime, conversion
  ["Tensor:numel"] = { "()", "The number of elements." },
  ["Tensor:nelement"] = { "()", "The number of elements (as numel)." },
  ["Tensor:size"] = { "([dim])", "The size of dimension dim (1-based, negative from the end), or the shape." },
  ["Tensor:stride"] = { "([dim])", "The stride (in elements) of dimension dim, or all strides." },
  ["Tensor:is_contiguous"] = { "()", "Whether the elements lie in row-major order with no gaps." },
  ["Tensor:item"] = { "()", "The value of a one-element tensor as a Lua number or boolean." },
  ["Tensor:totable"] = { "()", "The values as nested Lua tables (a number for a 0-D tensor)." },
  ["Tensor:tolist"] = { "()", "The values as nested Lua tables (as totable)." },
  ["Tensor:data_ptr"] = { "()", "The address of the first element, as a light userdata (for FFI code)." },
  ["Tensor:free"] = { "()", "Release the tensor's memory now instead of at collection; the tensor is unusable after." },
  ["Tensor:move_to"] = { "(device [, device_id])", "The tensor on another device (a contiguous copy; itself when already there)." },
  ["Tensor:astype"] = { "(dtype)", "A copy converted to dtype (the same tensor when it already has it)." },
  ["Tensor:to"] = { "(dtype)", "A copy converted to dtype (as astype)." },
  ["Tensor:clone"] = { "()", "A copy with its own storage, recorded for autograd." },
  ["Tensor:contiguous"] = { "()", "The tensor itself when contiguous, else a contiguous copy." },
  ["Tensor:detach"] = { "()", "A view of the same data with no autograd history." },
  -- views
  ["Tensor:reshape"] = { "(shape | ...)", "The same elements in a new shape (a view when possible, else a copy); one size may be -1." },
  ["Tensor:view"] = { "(shape | ...)", "A view with a new shape; the tensor must be contiguous enough." },
  ["Tensor:transpose"] = { "(dim1, dim2)", "A view with two dimensions swapped." },
  ["Tensor:permute"] = { "(dims | ...)", "A view with the dimensions reordered." },
  ["Tensor:squeeze"] = { "([dim | dims]) | ({dim =})", "A view without dimensions of size 1 (or only those of dim, or of a list of dims)." },
  ["Tensor:unsqueeze"] = { "(dim) | ({dim =})", "A view with a new dimension of size 1 at dim." },
  ["Tensor:expand_dims"] = { "(dim) | ({dim =})", "A view with a new dimension of size 1 at dim (as unsqueeze)." },
  ["Tensor:flatten"] = { "([start_dim [, end_dim]]) | ({start_dim =, end_dim =})", "A view (or copy) with dimensions start_dim..end_dim merged into one." },
  ["Tensor:narrow"] = { "(dim, start, length)", "A view of length elements of dimension dim from start (1-based)." },
  ["Tensor:unbind"] = { "([dim = 1]) | ({dim =})", "The slices along dim (views without that dimension), as a Lua sequence." },
  ["Tensor:select"] = { "(dim, index)", "A view of one index of dimension dim, which is removed." },
  ["Tensor:expand"] = { "(shape | ...)", "A view broadcast to a larger shape without copying." },
  ["Tensor:broadcast_to"] = { "(shape)", "A view broadcast to shape (as expand)." },
  -- elementwise
  ["Tensor:add"] = { "(other)", "Elementwise t + other (a tensor or a number), broadcasting." },
  ["Tensor:sub"] = { "(other)", "Elementwise t - other, broadcasting." },
  ["Tensor:mul"] = { "(other)", "Elementwise t * other, broadcasting." },
  ["Tensor:div"] = { "(other)", "Elementwise t / other (true division), broadcasting." },
  ["Tensor:pow"] = { "(exponent)", "Elementwise t ^ exponent, broadcasting." },
  ["Tensor:maximum"] = { "(other)", "Elementwise maximum of t and other, broadcasting." },
  ["Tensor:minimum"] = { "(other)", "Elementwise minimum of t and other, broadcasting." },
  ["Tensor:eq"] = { "(other)", "Elementwise t == other, a bool tensor." },
  ["Tensor:ne"] = { "(other)", "Elementwise t ~= other, a bool tensor." },
  ["Tensor:lt"] = { "(other)", "Elementwise t < other, a bool tensor." },
  ["Tensor:le"] = { "(other)", "Elementwise t <= other, a bool tensor." },
  ["Tensor:gt"] = { "(other)", "Elementwise t > other, a bool tensor." },
  ["Tensor:ge"] = { "(other)", "Elementwise t >= other, a bool tensor." },
  ["Tensor:logical_and"] = { "(other)", "Elementwise logical and, a bool tensor." },
  ["Tensor:logical_or"] = { "(other)", "Elementwise logical or, a bool tensor." },
  ["Tensor:logical_not"] = { "()", "Elementwise logical not, a bool tensor." },
  ["Tensor:abs"] = { "()", "Elementwise absolute value." },
  ["Tensor:neg"] = { "()", "Elementwise negation (as -t)." },
  ["Tensor:exp"] = { "()", "Elementwise e^x." },
  ["Tensor:log"] = { "()", "Elementwise natural logarithm." },
  ["Tensor:log1p"] = { "()", "Elementwise log(1 + x), accurate for small x." },
  ["Tensor:sqrt"] = { "()", "Elementwise square root." },
  ["Tensor:rsqrt"] = { "()", "Elementwise 1 / sqrt(x)." },
  ["Tensor:sin"] = { "()", "Elementwise sine." },
  ["Tensor:cos"] = { "()", "Elementwise cosine." },
  ["Tensor:tanh"] = { "()", "Elementwise hyperbolic tangent." },
  ["Tensor:sigmoid"] = { "()", "Elementwise 1 / (1 + e^-x)." },
  ["Tensor:relu"] = { "()", "Elementwise max(x, 0)." },
  ["Tensor:gelu"] = { "()", "Elementwise GELU, x * Phi(x)." },
  ["Tensor:silu"] = { "()", "Elementwise x * sigmoid(x)." },
  ["Tensor:floor"] = { "()", "Elementwise rounding down." },
  ["Tensor:ceil"] = { "()", "Elementwise rounding up." },
  ["Tensor:round"] = { "()", "Elementwise rounding to the nearest integer, halves to even." },
  ["Tensor:sign"] = { "()", "Elementwise -1, 0 or 1." },
  ["Tensor:erf"] = { "()", "Elementwise Gauss error function." },
  ["Tensor:erfc"] = { "()", "Elementwise complementary error function, 1 - erf(x)." },
  ["Tensor:tan"] = { "()", "Elementwise tangent." },
  ["Tensor:atan"] = { "()", "Elementwise arctangent." },
  ["Tensor:asin"] = { "()", "Elementwise arcsine (NaN outside [-1, 1])." },
  ["Tensor:acos"] = { "()", "Elementwise arccosine (NaN outside [-1, 1])." },
  ["Tensor:sinh"] = { "()", "Elementwise hyperbolic sine." },
  ["Tensor:cosh"] = { "()", "Elementwise hyperbolic cosine." },
  ["Tensor:log2"] = { "()", "Elementwise base-2 logarithm." },
  ["Tensor:log10"] = { "()", "Elementwise base-10 logarithm." },
  ["Tensor:exp2"] = { "()", "Elementwise 2^x." },
  ["Tensor:expm1"] = { "()", "Elementwise e^x - 1, accurate for small x." },
  ["Tensor:square"] = { "()", "Elementwise x * x (integers keep their dtype)." },
  ["Tensor:reciprocal"] = { "()", "Elementwise 1 / x." },
  ["Tensor:isnan"] = { "()", "Elementwise x is NaN, a bool tensor." },
  ["Tensor:isinf"] = { "()", "Elementwise x is +-inf, a bool tensor." },
  ["Tensor:isfinite"] = { "()", "Elementwise x is neither NaN nor infinite, a bool tensor." },
  ["Tensor:atan2"] = { "(other)", "Elementwise atan2(t, other), the angle of (other, t), broadcasting." },
  ["Tensor:remainder"] = { "(other)", "Elementwise remainder with the divisor's sign (Python's %), broadcasting." },
  ["Tensor:fmod"] = { "(other)", "Elementwise remainder with the dividend's sign (C's fmod), broadcasting." },
  ["Tensor:floor_divide"] = { "(other)", "Elementwise floor(t / other), broadcasting." },
  ["Tensor:logical_xor"] = { "(other)", "Elementwise logical exclusive or, a bool tensor." },
  ["Tensor:nan_to_num"] = { "([nan] [, posinf] [, neginf])", "A copy with NaN, +inf and -inf replaced (defaults 0 and the dtype's extremes)." },
  ["Tensor:lerp"] = { "(end, weight)", "Elementwise t + weight * (end - t), broadcasting." },
  ["Tensor:softmax"] = { "([dim]) | ({dim =})", "Softmax along dim (default the last)." },
  ["Tensor:log_softmax"] = { "([dim]) | ({dim =})", "Log of softmax along dim (default the last), computed stably." },
  ["Tensor:clamp"] = { "([min] [, max]) or {min =, max =}", "Elementwise x limited to [min, max]; nil leaves a side open." },
  ["Tensor:masked_fill"] = { "(mask, value)", "A copy with value where the bool tensor mask is true (broadcasting)." },
  ["Tensor:masked_select"] = { "(mask)", "The elements where the bool tensor mask (broadcast) is true, as a 1-D tensor." },
  ["Tensor:masked_scatter"] = { "(mask, source)", "A copy whose positions where mask is true take source's elements in order." },
  ["Tensor:nonzero"] = { "([as_tuple])", "The 1-based positions of the non-zero elements, int64 {k, ndim} (or a list of columns)." },
  ["Tensor:copy_"] = { "(src)", "Copy src's values into t (broadcasting, converting dtype); returns t." },
  ["Tensor:fill_"] = { "(value)", "Set every element to value; returns t." },
  ["Tensor:zero_"] = { "()", "Set every element to 0; returns t." },
  -- reductions
  ["Tensor:sum"] = { "([dim | dims] [, keepdim])", "The sum of all elements, or along dim (1-based; a table for several); keepdim keeps them as size 1." },
  ["Tensor:mean"] = { "([dim | dims] [, keepdim])", "The mean of all elements, or along dim." },
  ["Tensor:prod"] = { "([dim | dims] [, keepdim])", "The product of all elements, or along dim." },
  ["Tensor:max"] = { "([dim] [, keepdim])", "The largest element, or along dim the values and their (1-based) indices." },
  ["Tensor:min"] = { "([dim] [, keepdim])", "The smallest element, or along dim the values and their (1-based) indices." },
  ["Tensor:argmax"] = { "([dim] [, keepdim])", "The 1-based index of the largest element (of the flattened tensor, or along dim)." },
  ["Tensor:argmin"] = { "([dim] [, keepdim])", "The 1-based index of the smallest element (of the flattened tensor, or along dim)." },
  ["Tensor:var"] = { "([dim | dims] [, ddof] [, keepdim])", "The variance of all elements, or along dim, with ddof degrees of freedom removed (default 0)." },
  ["Tensor:std"] = { "([dim | dims] [, ddof] [, keepdim])", "The standard deviation, as var then sqrt." },
  ["Tensor:norm"] = { "([p [, dim [, keepdim]]])", "The p-norm (default 2; p may be negative, or \"fro\") of all elements, or along dim." },
  ["Tensor:all"] = { "([dim | dims] [, keepdim])", "Whether every element is true (non-zero), overall or along dim." },
  ["Tensor:any"] = { "([dim | dims] [, keepdim])", "Whether some element is true (non-zero), overall or along dim." },
  ["Tensor:cumsum"] = { "([dim] [, dtype]) | ({dim =, dtype =})", "Running sums along dim (over the flattened tensor without dim)." },
  -- linear algebra and indexing
  ["Tensor:matmul"] = { "(other)", "Matrix product, batched and broadcasting over leading dimensions (1-D operands as vectors)." },
  ["Tensor:mm"] = { "(other)", "The product of two 2-D matrices." },
  ["Tensor:bmm"] = { "(other)", "Batched product of 3-D tensors {b, n, m} x {b, m, p}." },
  ["Tensor:dot"] = { "(other)", "The dot product of two 1-D tensors." },
  ["Tensor:gather"] = { "(dim, index)", "Values picked along dim at the (1-based) positions in the integer tensor index." },
  ["Tensor:scatter"] = { "(dim, index, src)", "A copy with src's values written along dim at the (1-based) positions in index." },
  ["Tensor:index_select"] = { "(dim, index)", "The entries of dimension dim at the (1-based) positions of the 1-D integer tensor index." },
  ["Tensor:tile"] = { "(reps | ...)", "The tensor repeated reps[i] times along each dimension." },
  ["Tensor:repeat_interleave"] = { "(repeats [, dim]) | (repeats, {dim =})", "Each element repeated repeats times (a number, or one count per element) along dim (of the flattened tensor without dim)." },
  ["Tensor:pad"] = { "(pads [, mode = \"constant\"] [, value])", "A copy padded in mode constant (value, default 0), reflect, replicate or circular: pads lists (before, after) pairs, the last dimension first." },
  -- autograd
  ["Tensor:requires_grad_"] = { "([on])", "Make t (a floating-point leaf) record gradients, or stop; returns t." },
  ["Tensor:stop_gradient"] = { "()", "A view of t through which no gradient flows." },
  ["Tensor:is_leaf"] = { "()", "Whether t was made by the user rather than recorded from an op." },
  ["Tensor:register_hook"] = { "(fn)", "Call fn(grad) when t's gradient is computed; fn may return a replacement. Returns a handle with remove()." },
  -- the neural-network op families (core.nnops, also cell.ops.<name>)
  ["cell.ops.conv2d"] = { "(x, w [, b], {stride =, padding =, dilation =, groups =})", "2-D convolution of x {N, C, H, W} with w {O, C/groups, kh, kw}, explicit zero padding {top, bottom, left, right}." },
  ["cell.ops.max_pool2d"] = { "(x, kernel, {stride =, padding =, dilation =, ceil_mode =, return_indices =})", "2-D max pooling; kernel n or {kh, kw}; stride defaults to kernel." },
  ["cell.ops.avg_pool2d"] = { "(x, kernel, {stride =, padding =, ceil_mode = false, count_include_pad = true})", "2-D average pooling; stride defaults to kernel." },
  ["cell.ops.softplus"] = { "(x, {beta = 1, threshold = 20})", "Elementwise log(1 + e^(beta x)) / beta, x itself where beta x > threshold." },
  ["cell.ops.softmax"] = { "(x [, dim]) | (x, {dim =})", "Softmax along dim (1-based, negative from the end)." },
  ["cell.ops.log_softmax"] = { "(x [, dim]) | (x, {dim =})", "Log of softmax along dim, computed stably." },
  ["cell.ops.batch_norm"] = { "(x, running_mean, running_var, weight, bias, {training =, momentum = 0.1, eps = 1e-5})", "Batch normalisation over N (and H, W); in training it updates the running statistics in place (running = (1 - momentum) * running + momentum * batch)." },
  ["cell.ops.layer_norm"] = { "(x, normalized_ndim, weight, bias, eps)", "Normalise over the last normalized_ndim dimensions, then scale and shift." },
  ["cell.ops.dense"] = { "(x, weight [, bias])", "The fully connected layer x W^T + b for x {..., in}, weight {out, in}, bias {out}: one fused op." },
  ["cell.ops.dropout"] = { "(x, p, training)", "Zero elements with probability p and scale the rest by 1/(1-p); identity when not training." },
  ["cell.ops.embedding"] = { "(ids, weight)", "The rows of weight {V, D} at the 1-based integer ids (any shape)." },
  ["cell.ops.cross_entropy"] = { "(logits, target, {reduction =, weight =, ignore_index =, label_smoothing =})", "Cross-entropy of logits {N, C} against class ids 1..C (or probabilities), fused with log-softmax." },
  ["cell.ops.nll_loss"] = { "(logp, target, {reduction =, weight =, ignore_index =})", "Negative log-likelihood of log-probabilities against class ids 1..C." },
  ["cell.ops.mse_loss"] = { "(x, y [, reduction])", "Mean squared error (reduction \"mean\", \"sum\" or \"none\")." },
  ["cell.ops.l1_loss"] = { "(x, y [, reduction])", "Mean absolute error (reduction \"mean\", \"sum\" or \"none\")." },
  ["cell.ops.bce_with_logits"] = { "(logits, target, {reduction =, weight =, pos_weight =})", "Binary cross-entropy on logits, fused with the sigmoid and numerically stable." },
  -- ordering and rearranging
  ["Tensor:sort"] = { "([dim = -1] [, descending = false]) | ({dim =, descending =, stable =})", "Stable sort along dim: the values and their 1-based indices (NaN sorts as the largest)." },
  ["Tensor:argsort"] = { "([dim = -1] [, descending = false]) | ({dim =, descending =})", "The 1-based indices that sort t along dim (stable)." },
  ["Tensor:topk"] = { "(k [, dim = -1] [, largest = true] [, sorted = true]) | (k, {dim =, largest =, sorted =})", "The k largest (or smallest) values along dim and their 1-based indices." },
  ["Tensor:median"] = { "([dim [, keepdim]]) | ({dim =, keepdim =})", "The lower median of all elements, or along dim the values and their 1-based indices." },
  ["Tensor:unique"] = { "([{sorted =, return_inverse =, return_counts =}])", "The sorted distinct elements, then the inverse indices and the counts when asked for." },
  ["Tensor:cumprod"] = { "(dim [, {dtype =}]) | ({dim =, dtype =})", "Running products along dim (integers give int64)." },
  ["Tensor:logsumexp"] = { "([dim | dims] [, keepdim])", "The log of the sum of exp(t) over dims, computed without overflow." },
  ["Tensor:amax"] = { "([dim | dims] [, keepdim])", "The largest values over dims (the gradient is split among ties)." },
  ["Tensor:amin"] = { "([dim | dims] [, keepdim])", "The smallest values over dims (the gradient is split among ties)." },
  ["Tensor:tril"] = { "([diagonal = 0])", "The lower triangle of the last two dimensions, the rest zero." },
  ["Tensor:triu"] = { "([diagonal = 0])", "The upper triangle of the last two dimensions, the rest zero." },
  ["Tensor:flip"] = { "(dims | dim, ...)", "The elements in reverse order along each of dims." },
  ["Tensor:roll"] = { "(shifts [, dims])", "The elements shifted along dims, wrapping around (the flattened tensor without dims)." },
  ["Tensor:diag"] = { "([diagonal = 0])", "A 1-D tensor as a diagonal matrix, or a matrix's diagonal as 1-D." },
  ["Tensor:trace"] = { "()", "The sum of a matrix's main diagonal." },
}

-- Source comments ------------------------------------------------------------------------

local files = {}

--- The lines of a source file (cached), or nil.
local function file_lines(path)
  local lines = files[path]
  if lines == nil then
    lines = false
    local f = io.open(path, "r")
    if f then
      lines = {}
      for l in f:lines() do lines[#lines + 1] = l end
      f:close()
    end
    files[path] = lines
  end
  return lines or nil
end

--- The path of a chunk's source ("@path"), or nil for code not from a file.
local function source_path(source)
  if type(source) == "string" and source:sub(1, 1) == "@" then return source:sub(2) end
  return nil
end

--- The first sentence of comment lines (their text, without the dashes):
-- the lines up to a blank one, a tag (@param) or an indented example,
-- joined, cut as M.first_sentence cuts (not after "e.g." or in "0.5").
local function first_sentence(texts)
  local words = {}
  for i = 1, #texts do
    local t = texts[i]
    if t:match("^%s*$") or t:match("^%s*@") or (i > 1 and t:match("^    ")) then break end
    words[#words + 1] = t:match("^%s*(.-)%s*$")
  end
  local s = M.first_sentence(table.concat(words, " "))
  if #s > 240 then s = s:sub(1, 237):gsub("%s+%S*$", "") .. "..." end
  return s ~= "" and s or nil
end

--- The documentation comment just above line `line` of file `path`: the
-- contiguous `--` lines above it, from the first `---` one. Its first
-- sentence, or nil.
function M.comment_above(path, line)
  local lines = path and file_lines(path)
  if not lines or not line or line < 1 then return nil end
  local i = line - 1
  while i >= 1 and lines[i]:match("^%s*%-%-") and not lines[i]:match("^%s*%-%-%[%[") do i = i - 1 end
  local from
  for j = i + 1, line - 1 do
    if lines[j]:match("^%s*%-%-%-") then
      from = j
      break
    end
  end
  if not from then return nil end
  local texts = {}
  for j = from, line - 1 do texts[#texts + 1] = lines[j]:gsub("^%s*%-%-%-?", "") end
  return first_sentence(texts)
end

--- The first sentence of the header comment of file `path` (the `--`
-- lines it starts with), or nil.
function M.header(path)
  local lines = path and file_lines(path)
  if not lines then return nil end
  local i = 1
  if lines[1] and lines[1]:sub(1, 2) == "#!" then i = 2 end
  local texts = {}
  while lines[i] and lines[i]:match("^%-%-") and not lines[i]:match("^%-%-%[%[") do
    texts[#texts + 1] = lines[i]:gsub("^%-%-%-?", "")
    i = i + 1
  end
  return first_sentence(texts)
end

-- The reference (docs/reference/*.md) ----------------------------------------------------

--- Where the reference pages are: beside this file once installed
-- (share/lua/<V>/cell/docs/reference), else the source tree's docs/reference.
-- Set M.reference_dir to read another folder.
M.reference_dir = nil

local function this_dir()
  local src = debug.getinfo(1, "S").source
  if type(src) ~= "string" or src:sub(1, 1) ~= "@" then return nil end
  return src:sub(2):match("^(.*)[/\\]") or "."
end

local function readable(path)
  local f = io.open(path, "r")
  if f then f:close() end
  return f ~= nil
end

--- The folder holding the reference's index.md, or nil.
function M.find_reference()
  if M.reference_dir then return M.reference_dir end
  local dir = this_dir()
  if not dir then return nil end
  for _, d in ipairs { dir .. "/docs/reference", dir .. "/../../docs/reference" } do
    if readable(d .. "/index.md") then return d end
  end
  return nil
end

--- The entries of one Markdown page: a sequence of {name =, signature =
-- (lines of the fenced block after the heading), body = (the text after
-- it, up to the next heading of level 1 to 3), page =}.
function M.parse_page(text, page)
  local entries, cur = {}, nil
  local in_fence, fence = false, nil
  local state -- "sig_wait", "sig", "body"
  for line in (text .. "\n"):gmatch("(.-)\r?\n") do
    local fence_mark = line:match("^%s*(```+)") or line:match("^%s*(~~~+)")
    local name = not in_fence and line:match("^###%s+`([^`]+)`%s*$")
    if name then
      cur = { name = name, signature = {}, body = {}, page = page }
      entries[#entries + 1] = cur
      state = "sig_wait"
    elseif not in_fence and line:match("^#%s") or (not in_fence and line:match("^##%s")) or
        (not in_fence and line:match("^###%s")) then
      cur = nil
    elseif cur then
      if state == "sig_wait" and fence_mark then
        state, in_fence, fence = "sig", true, fence_mark
      elseif state == "sig" and fence_mark and fence_mark == fence then
        state, in_fence = "body", false
      elseif state == "sig" then
        cur.signature[#cur.signature + 1] = line
      elseif state == "sig_wait" and not line:match("^%s*$") then
        state = "body"
        cur.body[#cur.body + 1] = line
      elseif state == "body" then
        if fence_mark then
          if in_fence and fence_mark == fence then in_fence = false
          elseif not in_fence then in_fence, fence = true, fence_mark end
        end
        cur.body[#cur.body + 1] = line
      end
    elseif fence_mark then
      if in_fence and fence_mark == fence then in_fence = false
      elseif not in_fence then in_fence, fence = true, fence_mark end
    end
  end
  for _, e in ipairs(entries) do
    while #e.body > 0 and e.body[#e.body]:match("^%s*$") do table.remove(e.body) end
    while #e.body > 0 and e.body[1]:match("^%s*$") do table.remove(e.body, 1) end
    e.body = table.concat(e.body, "\n")
  end
  return entries
end

--- The pages the reference's index.md links to (`name.md`), in order.
local function reference_pages(dir)
  local f = io.open(dir .. "/index.md", "r")
  if not f then return {} end
  local text = f:read("*a")
  f:close()
  local pages, seen = {}, {}
  for target in text:gmatch("%]%(([%w_%-]+%.md)[#)]") do
    if not seen[target] then
      seen[target] = true
      pages[#pages + 1] = target
    end
  end
  return pages
end

local reference -- { list = {...}, by_key = {...} }, read once
local by_value -- entry by the function, class or module it documents
local by_value_cell -- the cell namespace by_value was built with (nil: before cell loaded)

--- The lookup key of a name: `cell.nn.X` is `nn.X`, `:` is `.`.
local function key_of(name)
  name = name:gsub(":", ".")
  name = name:gsub("^cell%.nn%.", "nn.")
  return name
end
M.key_of = key_of

--- Every entry of the reference, read once: { list = entries in page
-- order, by_key = entry by key_of(name) }. Empty when there is none.
function M.reference()
  if reference then return reference end
  reference = { list = {}, by_key = {} }
  local dir = M.find_reference()
  if not dir then return reference end
  for _, page in ipairs(reference_pages(dir)) do
    local f = io.open(dir .. "/" .. page, "r")
    if f then
      local text = f:read("*a")
      f:close()
      for _, e in ipairs(M.parse_page(text, page)) do
        reference.list[#reference.list + 1] = e
        local k = key_of(e.name)
        if not reference.by_key[k] then reference.by_key[k] = e end
      end
    end
  end
  return reference
end

--- Forget what was read (after M.reference_dir changes).
function M.reload()
  reference = nil
  by_value = nil
end

--- The namespace `cell.x` names resolve in: `cell` itself once the
-- program loaded it, else what it is made of and the program loaded (the
-- engine's functions, the loaded submodules). The lookup is for values the
-- program holds, so it loads nothing, and `cell` least of all (cell.doc
-- sits beside cell, not above it).
local function namespace()
  local cell = package.loaded.cell
  if type(cell) == "table" then return cell end
  return setmetatable({}, {
    __index = function(_, k)
      local m = package.loaded["cell." .. k]
      if m ~= nil then return m end
      if type(k) == "string" and k:sub(1, 1) ~= "_" then return core[k] end
      return nil
    end,
  })
end

--- The value a reference name refers to, or nil: `Tensor:sum`,
-- `Parameter:set_data`, `nn.Dense`, `cell.dataset.Batches:each`, `cell.x.y`.
local function value_of(name)
  local ok, v = pcall(function()
    local cell = namespace()
    local roots = {
      cell = cell, nn = cell.nn, Tensor = core.Tensor,
      Parameter = require("cell.parameter").methods,
    }
    local first, rest = name:match("^([%w_]+)(.*)$")
    local v = roots[first]
    if first == "cell" and rest:match("^%.dataset%.Batches") then
      v, rest = require("cell.dataset.batches").Batches, rest:sub(#".dataset.Batches" + 1)
    elseif first == "cell" and rest:match("^%.ffi") then
      -- LuaJIT only, and only once the program loaded it
      v, rest = package.loaded["cell.ffi"], rest:sub(#".ffi" + 1)
    end
    if v == nil then return nil end
    for part in rest:gmatch("[.:]([%w_]+)") do
      if type(v) ~= "table" and type(v) ~= "userdata" then return nil end
      v = v[part]
      if v == nil then return nil end
    end
    return v
  end)
  if ok then return v end
  return nil
end

--- The reference entry documenting value v (a function, class or module),
-- or nil.
function M.entry_for_value(v)
  local tv = type(v)
  if tv ~= "function" and tv ~= "table" then return nil end
  if not by_value or by_value_cell ~= package.loaded.cell then -- rebuilt once cell loads
    by_value, by_value_cell = {}, package.loaded.cell
    for _, e in ipairs(M.reference().list) do
      local x = value_of(e.name)
      local tx = type(x)
      if (tx == "function" or tx == "table") and by_value[x] == nil then by_value[x] = e end
    end
  end
  return by_value[v]
end

--- The reference entry for a name as typed (`cell.nn.Cell.bprop`,
-- `nn.Cell:bprop`, `cell.zeros`), or nil.
function M.entry(name)
  return M.reference().by_key[key_of(name)]
end

local ABBREVIATIONS = { ["e.g."] = true, ["i.e."] = true, ["etc."] = true, ["vs."] = true, ["cf."] = true,
  ["approx."] = true, ["no."] = true, ["resp."] = true }

--- Markdown text as the terminal shows it: code spans and emphasis marks
-- dropped, links as their text.
function M.plain(s)
  s = s:gsub("%[([^%]]*)%]%([^)]*%)", "%1")
  s = s:gsub("`", "")
  s = s:gsub("%*%*", "")
  return s
end

--- The first sentence of Markdown text: up to the first ".", "!" or "?"
-- followed by a space or the end, not counting abbreviations (e.g., i.e.),
-- dots inside code spans or numbers; the first paragraph when no sentence ends.
function M.first_sentence(text)
  local para = text:match("^%s*(.-)\n%s*\n") or text:match("^%s*(.-)%s*$")
  para = para:gsub("%s*\n%s*", " ")
  local in_code = false
  local i, n = 1, #para
  while i <= n do
    local c = para:sub(i, i)
    if c == "`" then
      in_code = not in_code
    elseif not in_code and (c == "." or c == "!" or c == "?") then
      local after = para:sub(i + 1, i + 1)
      if after == "" or after:match("%s") then
        local word = para:sub(1, i):match("(%S+)$") or ""
        if not ABBREVIATIONS[word:lower()] then return para:sub(1, i) end
      end
    end
    i = i + 1
  end
  return para
end

--- The one-line help of an entry: its signature lines, then its first
-- sentence indented.
function M.entry_summary(e)
  local sig = #e.signature > 0 and table.concat(e.signature, "\n") or e.name
  return sig .. "\n  " .. M.plain(M.first_sentence(e.body))
end

--- The whole entry as the terminal shows it: the signature, then the text
-- with its examples, indented by two spaces.
function M.entry_text(e)
  local sig = #e.signature > 0 and table.concat(e.signature, "\n") or e.name
  local out = {}
  for line in (e.body .. "\n"):gmatch("(.-)\n") do
    if line:match("^%s*```") or line:match("^%s*~~~") then
      line = nil
    end
    if line then out[#out + 1] = line == "" and "" or ("  " .. M.plain(line)) end
  end
  return sig .. "\n" .. table.concat(out, "\n") .. "\n  (" .. e.page .. ")"
end

-- Names of things --------------------------------------------------------------------------

local c_names

--- The canonical name of an engine C function (`cell.zeros`, `Tensor:sum`,
-- `cell.ops.conv2d`), or nil.
function M.c_name(f)
  if not c_names then
    c_names = {}
    for k, v in pairs(core) do
      if type(v) == "function" and k:sub(1, 1) ~= "_" then c_names[v] = "cell." .. k end
    end
    for k, v in pairs(core.Tensor) do
      if type(v) == "function" and k:sub(1, 1) ~= "_" and not c_names[v] then c_names[v] = "Tensor:" .. k end
    end
    for k, v in pairs(core.nnops or {}) do
      if type(v) == "function" and not c_names[v] then c_names[v] = "cell.ops." .. k end
    end
  end
  return c_names[f]
end

--- The C table's entry for a canonical name; an in-place method without
-- its own entry borrows its out-of-place form's.
local function c_entry(canon)
  local e = M.C[canon]
  if e then return e[1], e[2] end
  local base = canon:match("^(Tensor:.+)_$")
  if base and M.C[base] then
    return M.C[base][1], "In place: " .. M.C[base][2]:gsub("^%u", string.lower) .. " Changes t and returns it."
  end
  return nil
end

--- The parameter list of Lua function f, as "a, b, ...": without a first
-- `self` when drop_self.
local function params_of(f, drop_self)
  local info = debug.getinfo(f, "u")
  local names = {}
  for i = 1, info.nparams or 0 do
    local n = debug.getlocal(f, i)
    if n then names[#names + 1] = n end
  end
  if drop_self then table.remove(names, 1) end
  if info.isvararg then names[#names + 1] = "..." end
  return table.concat(names, ", ")
end

--- "file:line" of a Lua function, for text about where it was defined.
local function where(f)
  local info = debug.getinfo(f, "S")
  local path = source_path(info.source)
  if path then return path .. ":" .. info.linedefined end
  return (info.short_src or "?") .. ":" .. info.linedefined
end

--- The one-line documentation of Lua function f, or nil.
function M.lua_doc(f)
  local info = debug.getinfo(f, "S")
  return M.comment_above(source_path(info.source), info.linedefined)
end

--- The name under which table t is in package.loaded, if it is (the REPL's
-- completion uses it too).
local function module_name(t)
  for k, m in pairs(package.loaded) do
    if rawequal(m, t) and type(k) == "string" then return k end
  end
  return nil
end
M._module_name = module_name

--- The file defining class cls: that of its own init, else of any function
-- it declares itself, else its parent's.
local function class_file(cls)
  local dict, declared = rawget(cls, "__instance"), rawget(cls, "__declared")
  local candidates = {}
  if declared.init then candidates[1] = rawget(dict, "init") end
  for k in pairs(declared) do candidates[#candidates + 1] = rawget(dict, k) end
  for i = 1, #candidates do
    local f = candidates[i]
    if type(f) == "function" then
      local info = debug.getinfo(f, "S")
      local path = source_path(info.source)
      if path then return path end
    end
  end
  local super = rawget(cls, "super")
  if super then return class_file(super) end
  return nil
end

--- The one-line documentation of class cls: its file's header sentence
-- when that names the class, else its own init's comment, else the header.
function M.class_doc(cls)
  local name = rawget(cls, "name")
  local path = class_file(cls)
  local header = M.header(path)
  if header and header:find("%f[%w_]" .. name:gsub("%p", "%%%0") .. "%f[^%w_]") then return header end
  local init = rawget(rawget(cls, "__declared"), "init") and rawget(rawget(cls, "__instance"), "init")
  local init_doc = type(init) == "function" and M.lua_doc(init)
  return init_doc or header
end

local shape_text = require("cell.util.types").shape_list

local function join(heading, text)
  if not text then return heading end
  return heading .. "\n  " .. text
end

--- The text `?name` prints for value v found under name: a heading (the
-- signature, or what v is) and, indented below it, its one-line doc.
function M.describe(v, name)
  local is_method = name:find(":", 1, true) ~= nil
  local tv = type(v)
  local e = M.entry_for_value(v)
  if e then return M.entry_summary(e) end
  if tv == "function" then
    local info = debug.getinfo(v, "S")
    if info.what == "C" then
      local canon = M.c_name(v)
      local sig, text = nil, nil
      if canon then sig, text = c_entry(canon) end
      if sig then return join(canon .. sig, text) end
      if canon then return join(canon .. "(...)", "A function of the C engine; it has no one-line documentation yet.") end
      return join(name .. "(...)", "A C function (not cell's), with no documentation here; Lua's own are in the Lua manual.")
    end
    local heading = name .. "(" .. params_of(v, is_method) .. ")"
    local text = M.lua_doc(v)
    if not text then
      local path = source_path(info.source)
      text = path and ("No documentation comment (defined at " .. where(v) .. ").")
        or ("Defined in this session (" .. where(v) .. "), with no documentation.")
    end
    return join(heading, text)
  end
  if tv == "table" and class.is_class(v) then
    local init = rawget(rawget(v, "__instance"), "init")
    local sig = type(init) == "function" and params_of(init, true) or ""
    return join("class " .. name .. "(" .. sig .. ")", M.class_doc(v) or "No documentation comment.")
  end
  if tv == "table" and rawequal(v, core.Tensor) then
    return join(name .. ": the table of tensor methods", M.C.Tensor[2])
  end
  if tv == "table" then
    local modname = module_name(v)
    if modname then
      local path = package.searchpath and package.searchpath(modname, package.path)
      return join("module " .. modname, M.header(path) or "No header comment.")
    end
    local mt = getmetatable(v)
    local cls = type(mt) == "table" and rawget(mt, "__class")
    if cls and class.is_class(cls) then
      local ce = M.entry_for_value(cls)
      local text = ce and M.plain(M.first_sentence(ce.body)) or M.class_doc(cls)
      return join(name .. ": an instance of " .. rawget(cls, "name"), text)
    end
    local n = 0
    for _ in next, v do n = n + 1 end
    return name .. (": a table with %d %s"):format(n, n == 1 and "entry" or "entries")
  end
  if core.is_tensor(v) then
    local what = "a Tensor"
    local ok, pname = pcall(function() return require("cell.parameter").is_parameter(v) and v.name end)
    if ok and pname then what = ("a Parameter named '%s'"):format(tostring(pname)) end
    return join(("%s: %s of shape %s and dtype %s"):format(name, what, shape_text(v.shape), tostring(v.dtype)),
      M.C.Tensor[2])
  end
  if core.is_dtype(v) then
    return ("%s: the dtype %s (%d bytes per element%s)"):format(name, tostring(v), v.itemsize,
      v.is_floating_point and ", floating point" or "")
  end
  local text = tv == "string" and ("%q"):format(v) or tostring(v)
  if #text > 60 then text = text:sub(1, 57) .. "..." end
  return ("%s: a %s, %s"):format(name, tv, text)
end

return M
