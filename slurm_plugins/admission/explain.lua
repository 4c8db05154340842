-- Replay the installed job_submit.lua on one job description, offline (lua5.1), to learn what
-- it says to the user: slurmrestd 22.05 drops the hook's slurm.log_user text on a refusal and
-- answers "Unspecified error", while sbatch prints it. Same hook file, same table, same words.
--   lua5.1 explain.lua HOOK < JOB     (JOB: a Lua table literal; see explain.py)
-- Prints the return code, then each message the hook gave the user, one per line.
NO_VAL = 4294967294
local said = {}
slurm = {
  SUCCESS = 0, ERROR = -1, NO_VAL = NO_VAL, INFINITE = 4294967295,
  log_user = function(...) said[#said + 1] = string.format(...) end,
  log_error = function() end,
  log_info = function() end,
  log_debug = function() end,
  log_verbose = function() end,
}
local chunk = assert(loadstring("return " .. io.read("*a")))
setfenv(chunk, {})
local job = chunk()
dofile(arg[1])
local rc = slurm_job_submit(job.desc, {}, job.uid)
print(rc)
for _, line in ipairs(said) do print((string.gsub(line, "\n", " "))) end
