--- cell.dataset.image_folder: ImageFolderDataset, MindSpore's reader of a
-- folder of class subfolders of images.
--
--     local ds = cell.dataset.ImageFolderDataset("photos", {decode = true, shuffle = true})
--     ds = ds:map({ vision.Resize({64, 64}), vision.ToTensor() }, {input_columns = "image"})
--
-- Columns: image (the file's bytes, 1-D uint8; with decode = true the
-- image, {H, W, 3} uint8 RGB) and label (int64, 1-based: the classes are
-- the subfolders in name order, or class_indexing's labels). Files are
-- read, and decoded, by a C transform at the head of the image column, so
-- the pipeline's worker threads do the reading; a file that is not an
-- image is an error naming it and the sample.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local rethrow = require("cell.errors").rethrow
local core = require "cell.core"
local sources = require "cell.dataset.sources"
local args_util = require "cell.util.args"
local type_name = require("cell.util.types").type_name

local M = {}

local TensorDataset = sources.TensorDataset
local ImageFolderDataset = TensorDataset:extend("ImageFolderDataset")
M.ImageFolderDataset = ImageFolderDataset

local OPTIONS = { "num_samples", "num_parallel_workers", "shuffle", "sampler", "extensions", "class_indexing",
  "decode", "num_shards", "shard_id", "cache", "decrypt" }

--- The classes to read and their labels: class_indexing's (checked), or
-- the folders in name order labelled 1, 2, ...
local function class_labels(fname, classes, ci)
  local labels = {}
  if ci == nil then
    for i, c in ipairs(classes) do labels[c] = i end
    return labels
  end
  if type(ci) ~= "table" or getmetatable(ci) ~= nil then
    raise(("TypeError: %s: class_indexing must be a table of folder names to labels, but got %s"):format(fname,
      type_name(ci)))
  end
  local present = {}
  for _, c in ipairs(classes) do present[c] = true end
  for k, v in pairs(ci) do
    if type(k) ~= "string" then
      raise(("TypeError: %s: class_indexing's keys must be folder names, but got %s"):format(fname, type_name(k)))
    end
    if type(v) ~= "number" or v ~= math.floor(v) then
      raise(("TypeError: %s: class_indexing['%s'] must be an integer label, but got %s"):format(fname, k,
        type(v) == "number" and tostring(v) or type_name(v)))
    end
    if not present[k] then
      raise(("ValueError: %s: class_indexing names '%s', which is not a subfolder"):format(fname, k))
    end
    labels[k] = v
  end
  return labels
end

--- ImageFolderDataset(dataset_dir [, {num_samples =, num_parallel_workers =,
-- shuffle = true, extensions =, class_indexing =, decode = false,
-- num_shards =, shard_id =, sampler =}]).
function ImageFolderDataset:init(dir, ...)
  local fname = "ImageFolderDataset"
  local o = args_util.named(fname, OPTIONS, 3, select("#", ...), ...)
  if type(dir) ~= "string" then
    raise(("TypeError: %s: dataset_dir must be a string, but got %s"):format(fname, type_name(dir)))
  end
  for _, k in ipairs { "cache", "decrypt" } do
    if o[k] ~= nil then raise(("NotImplementedError: %s: %s is not supported"):format(fname, k)) end
  end
  if core.file_kind(dir) ~= "directory" then
    raise(("ValueError: %s: the directory %s does not exist"):format(fname, dir))
  end
  local exts = o.extensions
  if exts ~= nil then
    if type(exts) ~= "table" or getmetatable(exts) ~= nil then
      raise(("TypeError: %s: extensions must be a list of strings, but got %s"):format(fname, type_name(exts)))
    end
    for i = 1, #exts do
      if type(exts[i]) ~= "string" then
        raise(("TypeError: %s: extensions[%d] must be a string, but got %s"):format(fname, i, type_name(exts[i])))
      end
    end
  end
  local decode = o.decode
  if decode == nil then decode = false end
  if type(decode) ~= "boolean" then
    raise(("TypeError: %s: decode must be a boolean, but got %s"):format(fname, type_name(decode)))
  end
  local ok, classes, files, idx = pcall(core._image_folder_scan, dir, exts)
  if not ok then rethrow(classes) end
  local labels = class_labels(fname, classes, o.class_indexing)
  local keep_files, keep_labels = {}, {}
  for i, f in ipairs(files) do
    local lab = labels[classes[idx[i] + 1]]
    if lab ~= nil then
      keep_files[#keep_files + 1] = f
      keep_labels[#keep_labels + 1] = lab
    end
  end
  if #keep_files == 0 then
    raise(("ValueError: %s: no image files found in the subfolders of %s%s"):format(fname, dir,
      exts and (" with extensions " .. table.concat(exts, ", ")) or ""))
  end
  local n = #keep_files
  self._reader = core._image_reader(keep_files, decode)
  self.files = keep_files
  self.classes = {}
  for _, c in ipairs(classes) do
    if labels[c] ~= nil then self.classes[#self.classes + 1] = c end
  end
  self._class_indexing = labels
  local shuffle = o.shuffle
  if shuffle == nil and o.sampler == nil then shuffle = true end
  TensorDataset.init(self, { core.arange(0, n, 1, core.int64), core.tensor(keep_labels, core.int64),
    column_names = { "image", "label" } }, {
    shuffle = shuffle, num_shards = o.num_shards, shard_id = o.shard_id, num_samples = o.num_samples,
    num_parallel_workers = o.num_parallel_workers, sampler = o.sampler,
  })
end

--- The folder-name-to-label table (a copy).
function ImageFolderDataset:get_class_indexing()
  local out = {}
  for k, v in pairs(self._class_indexing) do out[k] = v end
  return out
end

--- The plan of TensorDataset with the file reader first on the image column.
function ImageFolderDataset:_plan(epoch)
  local p = TensorDataset._plan(self, epoch)
  table.insert(p.ops[1], 1, self._reader)
  return p
end

return M
