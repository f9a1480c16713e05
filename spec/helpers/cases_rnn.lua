-- cases_rnn.lua - gradient-check entry for the recurrent time loop
-- (core.nnops.rnn, src/ops/rnn.c), merged into autograd_spec.lua's table:
-- name = { fn, {argument builders}, opts }. An LSTM (the cell with the most
-- paths), reversed, with per-sequence lengths (a constant argument).
return function(b)
  local cell, r, idx = b.cell, b.r, b.idx
  local nnops = cell.core.nnops
  return {
    RNNBackward = {
      function(x, h0, c0, wih, whh, bih, bhh, len)
        return nnops.rnn("LSTM", x, h0, c0, wih, whh, bih, bhh, len, true)
      end,
      { r { 3, 2, 3 }, r { 2, 2 }, r { 2, 2 }, r { 8, 3 }, r { 8, 2 }, r { 8 }, r { 8 }, idx { 3, 2 } },
      { skip = { [8] = true } },
    },
  }
end
