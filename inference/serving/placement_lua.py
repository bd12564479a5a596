"""The Lua scripts ``RedisPlacement`` runs: every read-modify-write of the placement state is one
script, so two web processes placing at once can never overfill a worker. ``COMMON`` holds the
helpers the others begin with."""

COMMON = """
local p = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function seats(sid)
  -- No entry: placed before seats were counted, so one player.
  return tonumber(redis.call('HGET', p .. ':seats', sid)) or 1
end
-- A worker's load: the seats of all its sessions.
local function load_of(name)
  local load = 0
  for _, sid in ipairs(redis.call('SMEMBERS', p .. ':ws:' .. name)) do
    load = load + seats(sid)
  end
  return load
end
-- Least-loaded live, non-draining worker with at least `need` free seats; ties: most free
-- seats, then name.
local function pick(stale_ms, now, need)
  local best, best_load, best_free
  for _, name in ipairs(redis.call('SMEMBERS', p .. ':workers')) do
    local w = redis.call('HMGET', p .. ':w:' .. name, 'capacity', 'last_beat', 'draining')
    if w[1] and w[2] and w[3] ~= '1' and now - tonumber(w[2]) < stale_ms then
      local load = load_of(name)
      local free = tonumber(w[1]) - load
      if free >= need and (best == nil or load < best_load
          or (load == best_load and (free > best_free or (free == best_free and name < best)))) then
        best, best_load, best_free = name, load, free
      end
    end
  end
  return best
end
local function assign(sid, name)
  redis.call('SADD', p .. ':ws:' .. name, sid)
  redis.call('HSET', p .. ':s2w', sid, name)
end
-- Every session of a worker becomes an orphan (its worker is gone or restarted); P:seats keeps
-- its seats, so it is re-placed only where they all fit.
local function orphan_all(name)
  for _, sid in ipairs(redis.call('SMEMBERS', p .. ':ws:' .. name)) do
    redis.call('HDEL', p .. ':s2w', sid)
    redis.call('RPUSH', p .. ':orphans', sid)
  end
  redis.call('DEL', p .. ':ws:' .. name)
end
"""

REGISTER = (
    COMMON
    + """
local name = ARGV[2]
orphan_all(name)  -- a restarted worker of the same name holds none of its old sessions
redis.call('HSET', p .. ':w:' .. name, 'device', ARGV[3], 'capacity', ARGV[4],
  'last_beat', now_ms(), 'fps', 0, 'load', 0, 'draining', 0)
redis.call('SADD', p .. ':workers', name)
return 1
"""
)

HEARTBEAT = (
    COMMON
    + """
local key = p .. ':w:' .. ARGV[2]
if redis.call('EXISTS', key) == 0 then return 0 end  -- reaped: the caller must re-register
redis.call('HSET', key, 'last_beat', now_ms(), 'load', ARGV[3], 'fps', ARGV[4])
return 1
"""
)

DEREGISTER = (
    COMMON
    + """
orphan_all(ARGV[2])
redis.call('DEL', p .. ':w:' .. ARGV[2])
redis.call('SREM', p .. ':workers', ARGV[2])
return 1
"""
)

RESERVE = (
    COMMON
    + """
local sid = ARGV[2]
local current = redis.call('HGET', p .. ':s2w', sid)
if current then return current end
local need = tonumber(ARGV[4])
local best = pick(tonumber(ARGV[3]), now_ms(), need)
if best then
  assign(sid, best)
  redis.call('HSET', p .. ':seats', sid, need)
end
return best
"""
)

RELEASE = (
    COMMON
    + """
local sid = ARGV[2]
local name = redis.call('HGET', p .. ':s2w', sid)
if name then
  redis.call('SREM', p .. ':ws:' .. name, sid)
  redis.call('HDEL', p .. ':s2w', sid)
end
redis.call('LREM', p .. ':orphans', 0, sid)
redis.call('HDEL', p .. ':seats', sid)
return name
"""
)

# One more player joins a placed session, if its worker has a seat left.
ADD_SEAT = (
    COMMON
    + """
local sid = ARGV[2]
local name = redis.call('HGET', p .. ':s2w', sid)
if not name then return 0 end
local capacity = tonumber(redis.call('HGET', p .. ':w:' .. name, 'capacity'))
if not capacity or capacity - load_of(name) < 1 then return 0 end
redis.call('HSET', p .. ':seats', sid, seats(sid) + 1)
return 1
"""
)

# One player leaves; the last seat goes only with release_slot.
REMOVE_SEAT = (
    COMMON
    + """
local n = tonumber(redis.call('HGET', p .. ':seats', ARGV[2]))
if n and n > 1 then redis.call('HSET', p .. ':seats', ARGV[2], n - 1) end
return 1
"""
)

LOAD = COMMON + "\nreturn load_of(ARGV[2])\n"

ENQUEUE = (
    COMMON
    + """
if redis.call('LPOS', p .. ':queue', ARGV[2]) == false then
  if ARGV[3] == '1' then
    redis.call('LPUSH', p .. ':queue', ARGV[2])
  else
    redis.call('RPUSH', p .. ':queue', ARGV[2])
  end
end
return 1
"""
)

# Dead workers' sessions become orphans, then orphans go to live workers while seats are free.
REAP = (
    COMMON
    + """
local stale_ms = tonumber(ARGV[2])
local now = now_ms()
local dead, placed = {}, {}
for _, name in ipairs(redis.call('SMEMBERS', p .. ':workers')) do
  local beat = redis.call('HGET', p .. ':w:' .. name, 'last_beat')
  if not beat or now - tonumber(beat) >= stale_ms then
    orphan_all(name)
    redis.call('DEL', p .. ':w:' .. name)
    redis.call('SREM', p .. ':workers', name)
    table.insert(dead, name)
  end
end
while true do
  local sid = redis.call('LINDEX', p .. ':orphans', 0)
  if not sid then break end
  local best = pick(stale_ms, now, seats(sid))
  if not best then break end  -- FIFO: a later, smaller orphan does not jump the head
  redis.call('LPOP', p .. ':orphans')
  assign(sid, best)
  table.insert(placed, sid)
  table.insert(placed, best)
end
return {dead, placed}
"""
)

# A shutting-down worker stops taking sessions and gives each of its own to another worker.
HANDOVER = (
    COMMON
    + """
local name = ARGV[2]
local stale_ms = tonumber(ARGV[3])
local now = now_ms()
redis.call('HSET', p .. ':w:' .. name, 'draining', 1)
local placed = {}
for _, sid in ipairs(redis.call('SMEMBERS', p .. ':ws:' .. name)) do
  redis.call('SREM', p .. ':ws:' .. name, sid)
  local best = pick(stale_ms, now, seats(sid))
  if best then
    assign(sid, best)
    table.insert(placed, sid)
    table.insert(placed, best)
  else
    redis.call('HDEL', p .. ':s2w', sid)
    redis.call('RPUSH', p .. ':orphans', sid)
  end
end
return placed
"""
)
