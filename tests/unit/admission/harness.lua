-- Offline harness for the rendered job_submit.lua (run with lua5.1).
--   lua5.1 harness.lua HOOK STEPS
-- STEPS is a Lua file returning a list of steps; each is a case (call the hook with a fake
-- job_desc) or a file operation / clock change. One JSON object per case goes to stdout.

NO_VAL = 4294967294
local logs = { user = {}, error = {}, info = {} }
slurm = {
  SUCCESS = 0, ERROR = -1, NO_VAL = NO_VAL, INFINITE = 4294967295,
  log_user = function(...) table.insert(logs.user, string.format(...)) end,
  log_error = function(...) table.insert(logs.error, string.format(...)) end,
  log_info = function(...) table.insert(logs.info, string.format(...)) end,
}

local hook_path, steps_path = arg[1], arg[2]
local steps = dofile(steps_path)
if arg[3] == "no-posix" then
  package.preload["posix.sys.stat"] = function() error("lua-posix is not installed") end
end
local clock = nil
local real_time = os.time
os.time = function(...)
  if clock ~= nil and select("#", ...) == 0 then return clock end
  return real_time(...)
end

local function json(v)
  local t = type(v)
  if t == "nil" then return "null" end
  if t == "boolean" or t == "number" then return tostring(v) end
  if t == "string" then
    return '"' .. string.gsub(v, '[%c"\\]', function(c)
      return string.format("\\u%04x", string.byte(c))
    end) .. '"'
  end
  local n, count = #v, 0
  for _ in pairs(v) do count = count + 1 end
  if n > 0 and n == count then
    local items = {}
    for i = 1, n do items[i] = json(v[i]) end
    return "[" .. table.concat(items, ",") .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = tostring(k) end
  table.sort(keys)
  local out = {}
  for _, k in ipairs(keys) do out[#out + 1] = json(k) .. ":" .. json(v[k] or v[tonumber(k)]) end
  return "{" .. table.concat(out, ",") .. "}"
end

-- job_desc is userdata in slurmctld: reads are counted, writes are recorded.
local function fake_job(fields, writes, reads)
  return setmetatable({}, {
    __index = function(_, k)
      reads[k] = (reads[k] or 0) + 1
      return fields[k]
    end,
    __newindex = function(_, k, v)
      writes[k] = v
      fields[k] = v
    end,
  })
end

local loaded = false
for _, step in ipairs(steps) do
  if step.clock ~= nil then clock = step.clock end
  if step.op == "rename" then
    assert(os.rename(step.from, step.to))
  elseif step.op == "remove" then
    os.remove(step.path)
  elseif step.op == "touch" then -- create if need be, then set its mtime
    local f = assert(io.open(step.path, "a"))
    f:close()
    assert(require("posix.utime").utime(step.path, step.mtime, step.mtime))
  elseif step.op == "chmod" then
    assert(require("posix.sys.stat").chmod(step.path, step.mode))
  elseif step.call ~= nil then
    if not loaded then
      dofile(hook_path) -- slurmctld loads the script on the first submission
      loaded = true
    end
    logs.user, logs.error, logs.info = {}, {}, {}
    local writes, reads = {}, {}
    local job = fake_job(step.job or {}, writes, reads)
    local rc
    if step.call == "submit" then
      rc = slurm_job_submit(job, {}, step.uid or 1000)
    else
      rc = slurm_job_modify(job, setmetatable({}, { __index = step.rec or {} }), {},
        step.uid or 1000)
    end
    print(json({ name = step.name, rc = rc, user = logs.user, errors = logs.error,
      info = logs.info, set = writes, reads = reads }))
  end
end
