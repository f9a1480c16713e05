--- char_lstm.lua - a character-level language model: an embedding, a
-- two-layer LSTM and a Dense layer, trained with cell.train.Model on the
-- fortune cookies of Debian's `fortunes` package (`make deps`), then saved
-- as a checkpoint, reloaded and sampled from.
-- With the defaults (4 epochs of 80 steps of 32 sequences of 64
-- characters, about half a minute on two otherwise idle cores) the training
-- loss ends near 2.6 nats per character, from 4.56 (log 96, a uniform guess)
-- at the start; 3.3 is what knowing only the characters' frequencies gives.
-- Run: bin/cell examples/char_lstm.lua [epochs] [steps per epoch] [checkpoint path]
local cell = require "cell"
local nn, train = cell.nn, cell.train

local epochs = tonumber(arg and arg[1]) or 4
local steps = tonumber(arg and arg[2]) or 80
local path = arg and arg[3] or "build/demo/char_lstm.safetensors"
local T, B, EMBED, HIDDEN = 64, 32, 48, 192
local DIR = "/usr/share/games/fortunes"
local FILES = { "fortunes", "wisdom", "literature", "people", "humorists", "science", "computers", "work",
  "politics", "platitudes", "education", "definitions" }

-- The corpus: the fortunes of the files above, each line break kept, the
-- "%" lines between fortunes as blank lines; tabs as spaces, anything
-- outside printable ASCII dropped.
local parts = {}
for _, name in ipairs(FILES) do
  local f = io.open(DIR .. "/" .. name, "rb")
  if f then
    parts[#parts + 1] = f:read("*a")
    f:close()
  end
end
if #parts == 0 then
  io.stderr:write("char_lstm: no corpus in " .. DIR .. "; install it with `make deps` (Debian's fortunes package)\n")
  os.exit(1)
end
local text = table.concat(parts, "\n%\n"):gsub("\n%%\n", "\n\n"):gsub("\t", "    "):gsub("[^\n\32-\126]", "")

-- The vocabulary: every character of the corpus, ids from 1.
local id_of, char_of = {}, {}
for ch in text:gmatch(".") do
  if not id_of[ch] then
    char_of[#char_of + 1] = ch
    id_of[ch] = #char_of
  end
end
local V = #char_of
local ids = {}
for i = 1, #text do ids[i] = id_of[text:sub(i, i)] end
print(("corpus: %d characters from %d files, %d distinct"):format(#text, #parts, V))

-- The training windows: x the characters s .. s+T-1 of a random start s,
-- y the ones after them.
cell.set_seed(1)
math.randomseed(1)
local n = steps * B
local xs, ys = {}, {}
for k = 1, n do
  local s = math.random(1, #ids - T - 1)
  local xr, yr = {}, {}
  for t = 1, T do xr[t], yr[t] = ids[s + t - 1], ids[s + t] end
  xs[k], ys[k] = xr, yr
end
local x_all, y_all = cell.tensor(xs, cell.int64), cell.tensor(ys, cell.int64)

local CharLSTM = nn.Cell:extend("CharLSTM")
function CharLSTM:init(vocab)
  self.embed = nn.Embedding(vocab, EMBED)
  self.lstm = nn.LSTM(EMBED, HIDDEN, { num_layers = 2, batch_first = true })
  self.head = nn.Dense(HIDDEN, vocab)
end
--- x {B, T} ids -> logits {B * T, V} (and the final states, when asked).
function CharLSTM:construct(x, hx)
  local out, st = self.lstm(self.embed(x), hx)
  local logits = self.head(out:reshape({ -1, HIDDEN }))
  return logits, st
end

--- The cross-entropy of logits {B * T, V} against ids {B, T}.
local SeqLoss = nn.Cell:extend("SeqLoss")
function SeqLoss:init() self.ce = nn.CrossEntropyLoss() end
function SeqLoss:construct(logits, y) return self.ce(logits, y:reshape({ -1 })) end

local net = CharLSTM(V)
print(net)
local batches = cell.dataset.batches(x_all, y_all, B, { shuffle = true, seed = 1 })
local total = epochs * batches:len()
local opt = nn.Adam(net:trainable_params(), nn.cosine_decay_lr(3e-4, 4e-3, total, 1, total))
-- Model's loss sees the first result of net(x), the logits.
local model = train.Model(net, SeqLoss(), opt)
local losses = {}
local Record = train.Callback:extend("Record")
function Record:on_train_epoch_end(ctx) losses[#losses + 1] = ctx:original_args().net_outputs:item() end
local t0 = cell.perf_counter()
model:train(epochs, batches, { callbacks = { Record() } })
local secs = cell.perf_counter() - t0

-- The mean loss of the last epoch's batches, measured again after training.
local sum, cnt = 0, 0
cell.no_grad(function()
  for x, y in cell.dataset.batches(x_all, y_all, 256):each(1) do
    sum, cnt = sum + SeqLoss()(net(x), y):item(), cnt + 1
  end
end)
print(("%d epochs of %d steps in %.1f s: loss %.3f at the end of epoch 1, training loss now %.3f nats/char")
  :format(epochs, steps, secs, losses[1] or 0 / 0, sum / cnt))

os.execute("mkdir -p '" .. path:match("^(.*)/[^/]*$") .. "'")
cell.save_checkpoint(net, path)
local fresh = CharLSTM(V)
local not_loaded = cell.load_param_into_net(fresh, cell.load_checkpoint(path))
assert(#not_loaded == 0, "every parameter loads")
print("saved and reloaded " .. path)

--- Sample n characters after `prime`, one step at a time, carrying the
-- LSTM's state; temperature below 1 sharpens the distribution.
local function sample(model_net, prime, count, temperature)
  local out, st = {}, nil
  local x
  cell.no_grad(function()
    local p = {}
    for i = 1, #prime do p[i] = id_of[prime:sub(i, i)] or 1 end
    local logits
    logits, st = model_net(cell.tensor({ p }, cell.int64))
    local last = logits:select(1, #prime)
    for _ = 1, count do
      local probs = cell.ops.softmax(last / temperature, -1)
      local id = probs:multinomial(1):item()
      out[#out + 1] = char_of[id]
      x = cell.tensor({ { id } }, cell.int64)
      logits, st = model_net(x, st)
      last = logits:select(1, 1)
    end
  end)
  return prime .. table.concat(out)
end

cell.set_seed(7)
print("--- sample (temperature 0.8) ---")
print(sample(fresh, "The ", 300, 0.8))
