-- lib/flow: a flow's jobs reach other queues through this queue's outbox.
-- A script that can end a flow's job writes, in its own slot, one operation per
-- hop: its id (deterministic), a header (JSON: k the kind, 'submit', 'report' or
-- 'cancel'; q the target queue; i the target job id; ...) and a body (raw bytes:
-- a result to pass on, or nothing). A relay applies it in the target queue's slot
-- (idempotently: job_flow_submit, job_child_done, job_flow_cancel), then acks it
-- here. Every operation written by this call is also in J.ops (op id, header,
-- body, flat), which the script replies, so the caller relays at once.
-- The flow keys, a block (lib/job_keys) bound by flow_keys(J, i):
--   +0  job_outbox       zset  operations for other queues -> when a relay may take them
--   +1  job_outbox_data  hash  operation id -> header JSON
--   +2  job_outbox_body  hash  operation id -> body (a result passed on)
--   +3  job_flow         hash  parent#life|i -> child i's outcome
--   +4  job_waiting      zset  flow parents waiting for their children -> created ms
--   +5  job_flow_live    zset  live flow jobs of this queue -> created ms
--!include jobs

-- flow_keys(J, first): KEYS[first..first+5] in J, and J.ops
local function flow_keys(J, first)
  J.outbox = KEYS[first]
  J.outbox_data = KEYS[first + 1]
  J.outbox_body = KEYS[first + 2]
  J.flow = KEYS[first + 3]
  J.waiting = KEYS[first + 4]
  J.flow_live = KEYS[first + 5]
  J.ops = {}
end

-- put_op(J, op, header, body, now, policy): an operation in the outbox, visible to
--   relays of stragglers after the relay lease (the caller relays it at once).
local function put_op(J, op, header, body, now, policy)
  local data = cjson.encode(header)
  redis.call('ZADD', J.outbox, now + policy.relay_lease, op)
  redis.call('HSET', J.outbox_data, op, data)
  if body ~= '' then
    redis.call('HSET', J.outbox_body, op, body)
  end
  local ops = J.ops
  ops[#ops + 1] = op
  ops[#ops + 1] = data
  ops[#ops + 1] = body
end

-- child_field(parent_entry, i) -> the `flow` hash field of child i's outcome
local function child_field(parent_entry, i)
  return parent_entry .. '|' .. i
end

-- flow_ended(J, id, record, state, now, policy): a flow's job ended (`state` f,
--   x or c; lib/terminal calls it). A finished chain step submits the next step
--   (its payload, or this result); a child reports its outcome to its parent; a
--   parent that did not finish cancels the children that have not reported.
local function flow_ended(J, id, record, state, now, policy)
  local entry = entry_of(id, record.l)
  redis.call('ZREM', J.flow_live, id)
  if state == 'f' and type(record.nx) == 'table' and #record.nx > 0 then
    local step = record.nx[1]
    local rest = {}
    for i = 2, #record.nx do
      rest[#rest + 1] = record.nx[i]
    end
    local header = {k = 'submit', q = step.q, i = step.i, o = step.o, p = step.p, g = record.g}
    if #rest > 0 then
      header.nx = rest
    end
    local body = ''
    if step.p == nil then
      body = redis.call('HGET', J.result, id) or ''
    end
    put_op(J, entry .. ':next', header, body, now, policy)
  end
  if record.pq then
    local header = {
      k = 'report', q = record.pq, i = record.pi, l = record.pl, n = record.pn,
      s = state, y = record.y, E = record.E,
    }
    local body = ''
    if state == 'f' then
      body = redis.call('HGET', J.result, id) or ''
    end
    put_op(J, entry .. ':report', header, body, now, policy)
  end
  if record.cn then
    if state ~= 'f' then
      for i = 0, record.cn - 1 do
        if redis.call('HEXISTS', J.flow, child_field(entry, i)) == 0 then
          local header = {k = 'cancel', q = record.cq[i + 1], i = id .. '.' .. i}
          put_op(J, entry .. ':cancel:' .. i, header, '', now, policy)
        end
      end
    end
    local fields = {}  -- the children's outcomes go (HDEL takes many fields)
    for i = 0, record.cn - 1 do
      fields[#fields + 1] = child_field(entry, i)
      if #fields == 500 or i == record.cn - 1 then
        redis.call('HDEL', J.flow, unpack(fields))
        fields = {}
      end
    end
  end
end
