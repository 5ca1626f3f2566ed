-- lib/job_keys: the keys every job script takes first, KEYS[1..15], bound to
-- names, and J, the table of them that the job pieces take. A script adds its
-- own keys (members, idle, stats, ...) and the notify channel to J.
local tasks = KEYS[1]
local job_prio = KEYS[2]
local job_seq = KEYS[3]
local jobs = KEYS[4]
local job_data = KEYS[5]
local job_result = KEYS[6]
local job_progress = KEYS[7]
local job_delayed = KEYS[8]
local job_retrying = KEYS[9]
local job_finished = KEYS[10]
local job_failed = KEYS[11]
local job_cancelled = KEYS[12]
local job_unique = KEYS[13]
local job_counts = KEYS[14]
local job_timer = KEYS[15]
local J = {
  tasks = tasks, prio = job_prio, seq = job_seq, jobs = jobs, data = job_data,
  result = job_result, progress = job_progress, delayed = job_delayed,
  retrying = job_retrying, finished = job_finished, failed = job_failed,
  cancelled = job_cancelled, unique = job_unique, counts = job_counts, timer = job_timer,
}
