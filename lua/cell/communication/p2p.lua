--- cell.communication.p2p: send and recv (MindSpore's comm_func.send and
-- recv, ops.Send and ops.Receive), differentiable as MindSpore makes them:
--
--   * send(x, dst) returns a placeholder (a zero of x's dtype, no dims);
--     when x records, the placeholder's backward receives the gradient of
--     x from dst -- what dst's recv sends back in its own backward.
--   * recv(template, src) returns a new tensor of the template's shape and
--     dtype holding what src sent; when the template records (requires
--     grad), the result's backward sends its gradient back to src, and the
--     template's own gradient is zeros (its values are never read).
--
-- So a model split across ranks trains as one: the first stage ends with
-- send (its loss is the placeholder), the next starts with recv, and each
-- backward pass hands the activations' gradients back up the pipeline.
-- A backward message travels on the same sr_tag, the other way.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local B = require "cell.communication.backend"
local X = require "cell.communication.transport"
local args_util = require "cell.util.args"
local type_name = require("cell.util.types").type_name

local M = {}

-- from cell.communication (init.lua binds them: one copy of each check)
local group_of, check_tensor, check_out, recording, node

function M._bind(g, ct, co, rec, nd)
  group_of, check_tensor, check_out, recording, node = g, ct, co, rec, nd
end

local function peer(what, g, p)
  if type(p) ~= "number" or p ~= math.floor(p) or p < 0 or p >= g.size or p == g.rank then
    raise(("ValueError: %s: the peer must be another rank of the group (0..%d, not %d), but got %s")
      :format(what, g.size - 1, g.rank, type(p) == "number" and tostring(p) or type_name(p)))
  end
  return p
end

local function tag_of(what, tag)
  if tag == nil then return 0 end
  if type(tag) ~= "number" or tag ~= math.floor(tag) or tag < 0 or tag > 32766 then
    raise(("ValueError: %s: sr_tag must be an integer in 0..32766, but got %s"):format(what, tostring(tag)))
  end
  return tag
end

--- Send t to group rank dst: its header (when checks are on), then the data.
local function raw_send(what, g, t, dst, tag)
  local rt = X.route(t)
  if X.check_headers then B.C.send_header(g.comm, X.header("send", t, nil, nil, rt), dst, tag) end
  local x = X.transport(what, g, rt, t)
  x.C.send(x.comm, X.buf_of(x, t), dst, tag)
end

--- Receive from group rank src a tensor of like's dtype and shape, on
-- like's device: a new tensor, or written into `into`.
local function raw_recv(what, g, like, src, tag, into)
  local rt = X.route(like)
  if X.check_headers then
    local theirs = B.C.recv_header(g.comm, src, tag)
    local mine = X.header("send", like, nil, nil, rt)
    for i = 2, 15 do
      if i <= 12 or i == 15 then
        if theirs[i] ~= mine[i] then
          -- take an MPI message off the channel, so later receives stay in step
          local n, dt = theirs[12], X.DTYPES[theirs[2]]
          if dt and n >= 0 and theirs[15] == 0 then
            B.C.recv(g.comm, X.on_device("CPU", 0, core.empty, { n }, core[dt]), src, tag)
          end
          raise(("%s: %s: rank %d sends %s, but this rank (%d) receives into %s"):format(
            theirs[2] ~= mine[2] and "TypeError" or "ValueError", what, src,
            (X.describe(theirs):gsub("^send of ", "")), g.rank, (X.describe(mine):gsub("^send of ", ""))))
        end
      end
    end
  end
  local x = X.transport(what, g, rt, like)
  local r = into ~= nil and X.buf_of(x, into) or X.new_buf(x, like, like.shape)
  x.C.recv(x.comm, r, src, tag)
  if into ~= nil then return X.write_back(into, r) end
  return X.to_device_of(like, r)
end

local P2P = { "group", "sr_tag" }

--- send(tensor, dst [, group, sr_tag = 0]): send tensor to group rank dst,
-- which calls recv with a tensor of the same dtype and shape. Returns a
-- placeholder (0 of tensor's dtype, no dims) whose backward receives the
-- gradient of tensor from dst.
function M.send(t, dst, ...)
  local group, tag = args_util.parse("send", P2P, 3, select("#", ...), ...)
  check_tensor("send", t)
  local g = group_of("send", group)
  dst = peer("send", g, dst)
  tag = tag_of("send", tag)
  raw_send("send", g, t, dst, tag)
  local out = X.to_device_of(t, core.zeros({}, t.dtype))
  if recording(t) then
    local like = t:detach()
    node(out, { t }, function()
      return raw_recv("send (backward)", g, like, dst, tag)
    end)
  end
  return out
end

local RECV = { "group", "sr_tag", "out" }

--- recv(tensor, src [, group, sr_tag = 0]) (or {group =, sr_tag =, out =}):
-- what group rank src sends, in a new tensor of tensor's dtype and shape
-- (tensor's values are not read); out = a tensor receives in place.
function M.recv(t, src, ...)
  local group, tag, out = args_util.parse("recv", RECV, 3, select("#", ...), ...)
  check_tensor("recv", t)
  local g = group_of("recv", group)
  src = peer("recv", g, src)
  tag = tag_of("recv", tag)
  if out ~= nil then
    check_out("recv", out, t.dtype, t.shape)
    return raw_recv("recv", g, t, src, tag, out)
  end
  -- A template that does not record is filled in place and returned, as
  -- MindSpore's in-place recv and cell's earlier recv did; one that
  -- records stays as it is (its values are a leaf's) and a new tensor
  -- carries the gradient back.
  if not recording(t) then return raw_recv("recv", g, t, src, tag, t) end
  local r = raw_recv("recv", g, t, src, tag)
  do
    local like = t:detach()
    node(r, { t }, function(grad)
      if grad.dtype ~= like.dtype then grad = grad:astype(like.dtype) end
      raw_send("recv (backward)", g, grad, src, tag)
      return X.to_device_of(like, core.zeros(like.shape, like.dtype))
    end)
  end
  return r
end

return M
