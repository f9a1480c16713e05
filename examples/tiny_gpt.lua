--- tiny_gpt.lua - a small GPT (token and position embeddings, causal
-- Transformer blocks, a linear head) trained character by character on the
-- fortune cookies of Debian's `fortunes` package; prints the loss falling
-- with the progress bar, saves a checkpoint, reloads it and samples text.
-- Run: bin/cell examples/tiny_gpt.lua [steps = 1600] [checkpoint path] [sample length = 300]
-- The default 1600 steps (batches of 16 windows of 32 characters) take about
-- 20 seconds on two idle cores and reach a held-out loss of about 2.0 nats
-- per character (3.8 before training; uniform over the 40 symbols: 3.69).
local cell = require "cell"
local nn, ops = cell.nn, cell.ops

local steps = tonumber(arg and arg[1]) or 1600
local path = arg and arg[2] or "build/demo/tiny_gpt.safetensors"
local sample_len = tonumber(arg and arg[3]) or 300
local DIR = os.getenv("FORTUNES_DIR") or "/usr/share/games/fortunes"
local T, D, HEADS, LAYERS, BATCH = 32, 64, 4, 2, 16

-- The corpus: every fortune file, lowercased, over a 40-symbol alphabet.
local ALPHABET = "\nabcdefghijklmnopqrstuvwxyz .,'!?-:;\"()0"
local V = #ALPHABET
local id_of = {}
for i = 1, V do id_of[ALPHABET:sub(i, i)] = i end
local FILES = { "fortunes", "cookie", "computers", "linux", "linuxcookie", "literature", "people", "science",
  "wisdom", "work", "humorists", "miscellaneous", "definitions", "platitudes", "law", "education" }
local ids = {}
for _, f in ipairs(FILES) do
  local h = io.open(DIR .. "/" .. f, "rb")
  if h then
    local text = h:read("a"):lower():gsub("%%\n", "\n"):gsub("[0-9]", "0"):gsub("\t", " ")
    h:close()
    for i = 1, #text do
      local id = id_of[text:sub(i, i)]
      if id then ids[#ids + 1] = id end
    end
  end
end
if #ids < 10000 then
  io.stderr:write("tiny_gpt: no fortunes found under " .. DIR .. "; install Debian's fortunes package "
    .. "(make deps) or set FORTUNES_DIR\n")
  os.exit(1)
end
local corpus = cell.tensor(ids, cell.int64)
local n_train = math.floor(#ids * 0.9)
print(("corpus: %d characters from %s (%d for training), vocabulary %d"):format(#ids, DIR, n_train, V))

-- Windows of T + 1 characters at random offsets: inputs and next characters.
local function windows(n, lo, hi, seed)
  cell.set_seed(seed)
  local starts = cell.randint(lo, hi - T - 1, { n }, cell.int64)
  local offs = cell.arange(0, T + 1, 1, cell.int64)
  local idx = starts:reshape({ n, 1 }) + offs:reshape({ 1, T + 1 })
  local w = corpus:index_select(1, idx:reshape({ -1 })):reshape({ n, T + 1 })
  return w:narrow(2, 1, T):contiguous(), w:narrow(2, 2, T):contiguous()
end

-- The model.
local GPT = nn.Cell:extend("TinyGPT")
function GPT:init()
  self.tok = nn.Embedding(V, D)
  self.pos = nn.Embedding(T, D)
  local block = nn.TransformerEncoderLayer(D, HEADS, { dim_feedforward = 4 * D, dropout = 0, activation = "gelu",
    batch_first = true, norm_first = true })
  self.blocks = nn.TransformerEncoder(block, LAYERS, nn.LayerNorm({ D }, { epsilon = 1e-5 }))
  self.head = nn.Dense(D, V)
end
function GPT:construct(x)
  local t = x.shape[2]
  local h = self.tok(x) + self.pos(cell.arange(1, t + 1, 1, cell.int64))
  return self.head(self.blocks(h, { is_causal = true }))
end

-- Cross-entropy over every position of every sequence.
local SeqLoss = nn.Cell:extend("SeqLoss")
function SeqLoss:construct(logits, y)
  return ops.cross_entropy(logits:reshape({ -1, V }), y:reshape({ -1 }))
end

local x_train, y_train = windows(steps * BATCH, 1, n_train, 1)
local x_val, y_val = windows(256, n_train + 1, #ids, 2)
cell.set_seed(3)
local net = GPT()
local loss_fn = SeqLoss()
local function val_loss(m)
  return cell.no_grad(function() return loss_fn(m(x_val), y_val):item() end)
end
print(("parameters: %d; held-out loss before training %.3f"):format((function()
  local n = 0
  for _, p in ipairs(net:trainable_params()) do n = n + p:nelement() end
  return n
end)(), val_loss(net)))

local epochs = 4
local batches = cell.dataset.batches(x_train:narrow(1, 1, math.floor(steps / epochs) * BATCH),
  y_train:narrow(1, 1, math.floor(steps / epochs) * BATCH), BATCH, { shuffle = true, seed = 1 })
local lr = nn.cosine_decay_lr(3e-4, 3e-3, epochs * batches:len(), batches:len(), epochs)
local model = cell.train.Model(net, loss_fn, nn.AdamW(net:trainable_params(), lr, { weight_decay = 0.01 }))
local t0 = cell.perf_counter()
model:train(epochs, batches)
local secs = cell.perf_counter() - t0
net:set_train(false)
print(("trained %d steps in %.1f s; held-out loss %.3f nats per character"):format(epochs * batches:len(), secs,
  val_loss(net)))

os.execute("mkdir -p '" .. path:match("^(.*)/[^/]*$") .. "'")
cell.save_checkpoint(net, path)
local fresh = GPT()
local not_loaded = cell.load_param_into_net(fresh, cell.load_checkpoint(path))
assert(#not_loaded == 0, "every parameter loads")
fresh:set_train(false)
print(("reloaded from %s: held-out loss %.3f"):format(path, val_loss(fresh)))

-- Sampling: each next character drawn from the softmax of the last logits.
cell.set_seed(4)
local out = { "\n" }
local ctx = { id_of["\n"] }
cell.no_grad(function()
  for _ = 1, sample_len do
    local first = math.max(1, #ctx - T + 1)
    local window = {}
    for i = first, #ctx do window[#window + 1] = ctx[i] end
    local logits = fresh(cell.tensor({ window }, cell.int64))
    local last = logits:select(2, #window):reshape({ V })
    local next_id = ops.multinomial(ops.softmax(last / 0.8, 1), 1):item()
    ctx[#ctx + 1] = next_id
    out[#out + 1] = ALPHABET:sub(next_id, next_id)
  end
end)
print("sample:" .. table.concat(out))
