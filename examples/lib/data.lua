--- examples/lib/data.lua - the data the examples train on: Fashion-MNIST
-- when the Debian package is installed, else a small synthetic stand-in of
-- the same layout, so the examples run anywhere.
local cell = require "cell"

local M = {}

--- train and test sets ({images, labels, classes}) and whether they are real.
-- `limit` (optional) keeps the first `limit` training images.
function M.load(dir, limit)
  local ok, train = pcall(cell.dataset.FashionMNIST, dir, "train")
  if not ok then
    local why = tostring(train):gsub("^.-:%d+: ", "")
    if not why:find("apt-get", 1, true) then
      why = why .. "\n(install the data set with `apt-get install dataset-fashion-mnist`)"
    end
    io.stderr:write("Fashion-MNIST is not available: ", why, "\nTraining on a synthetic set instead.\n")
    local s_train = cell.dataset.synthetic(6000, { seed = 1 })
    local s_test = cell.dataset.synthetic(1000, { seed = 2 })
    return s_train, s_test, false
  end
  local test = cell.dataset.FashionMNIST(dir, "test")
  if limit and limit < train.labels:size(1) then
    train = { images = train.images:narrow(1, 1, limit), labels = train.labels:narrow(1, 1, limit),
      classes = train.classes }
  end
  return train, test, true
end

return M
