#!lua name=aether
--[[
aether's Redis Functions library: every mutation of agent state goes through
aether_apply, which applies a batch of operations and appends their inverses to the
journal stream in the same atomic step. Checkpoints record a journal position;
aether_rollback applies the inverses back to one, atomically, and journals itself.

An operation is an array {CMD, key, arg...}. Inverses are chosen to stay small:
  * a key that did not exist: its inverse is DEL;
  * RPUSH / LPUSH / RPOP / LPOP / RPUSHCAP / ZADD / ZREM / ZINCRBY on an existing key: a
    structural inverse (a trim, a pop, a re-add of the removed members);
  * anything else (hashes, JSON documents, strings, sets): the DUMP of that small key.
A guard {ABSENT, key} changes nothing: it refuses the whole batch when the key exists, so
a write that must create a document (and count it) can never overwrite one.
Redis changes a list's or sorted set's internal encoding as it grows (listpack ->
quicklist/skiplist); such a change would make the restored key differ byte-wise, so
when an operation changes a key's encoding its inverse becomes the key's exact
pre-image (a listpack is canonical for its content, so it can be rebuilt).

Bounded work: no call runs past a budget (ARGV, default 100 ms). A rollback goes in
steps (aether_rollback_begin, then aether_rollback_step until done); while one is in
progress the write hold (KEYS "hold") exists and aether_apply and aether_checkpoint
refuse with TRYAGAIN, so writes wait and the result stays all-or-nothing. A snapshot
goes in SCAN pages, each DUMP tagged with the journal position it was taken at.

An entry holds the inverses ('i') and what was applied. The forward ops with their values
('f') only serve the PostgreSQL archive's point-in-time replay: rollback and undo apply
inverses. So while no archive follows the namespace (its cursor key is absent) an entry
keeps only the keys it touched ('k'), and a memory's vector is not copied into the
journal; once an archive follows (it sets the cursor before its first base snapshot),
every entry keeps 'f' in full.

Partial ops are impossible: check_op refuses an op whose key has another type or
whose numbers do not parse before anything is changed, and every op is then either one
command or several that cannot fail once the first succeeded.

Every function declares at least one key of its namespace, so a cluster routes it by
the namespace's hash slot; writes and replay declare every key they touch. The rollback
steps and the snapshot also read keys found at run time (named in the journal, by a
scan), always of that same namespace and so of the same slot; the cluster client keeps
them off half-migrated slots (aether/store/cluster.py).

The journal is a hash chain. Every entry carries 'd' (the digest of each key it touched,
as left by it: sha1 of the key's type and canonical content, '' when the key is gone), 'p'
(its predecessor's hash) and 'h' = sha1(p, its other fields in order, length-framed, a
long value by its own sha1: entry_framed). The digest of every state key is kept at
<journal>:digests and the chain's head ("<id> <h>") in the same hash, under HEAD_FIELD
(which no state key can be named: they all start with the namespace's prefix), both in the
step that appends the entry, so `aether journal verify`
(aether/checkpoints/chain.py) can tell an out-of-band edit, a forged, deleted, reordered or
truncated entry. Checkpoints record the head ('chain').

Only the journal lives here: retrieval's reads are reads.lua (library aether_reads),
locks and the inbox's replies coordination.lua (aether_coordination), each with its own
version, so a change to one reloads only that one.
]]

local VERSION = '28'

local STRUCTURAL = {
  RPUSH = true, LPUSH = true, RPOP = true, LPOP = true, RPUSHCAP = true,
  ZADD = true, ZREM = true, ZINCRBY = true,
}
local IMAGE = {
  SET = true, DEL = true, HSET = true, HDEL = true, HINCRBY = true, HINCRBYFLOAT = true,
  ['JSON.SET'] = true, ['JSON.DEL'] = true, ['JSON.MERGE'] = true,
  ['JSON.ARRAPPEND'] = true, ['JSON.NUMINCRBY'] = true, ['JSON.STRAPPEND'] = true,
  SADD = true, SREM = true, RESTORE = true,
}
local GUARD = { ABSENT = true }
local CHUNK = 500
local FAMILY = {
  RPUSH = 'list', LPUSH = 'list', RPOP = 'list', LPOP = 'list', RPUSHCAP = 'list',
  ZADD = 'zset', ZREM = 'zset', ZINCRBY = 'zset',
  HSET = 'hash', HDEL = 'hash', HINCRBY = 'hash', HINCRBYFLOAT = 'hash',
  SADD = 'set', SREM = 'set', SET = 'string',
  ['JSON.SET'] = 'ReJSON-RL', ['JSON.DEL'] = 'ReJSON-RL', ['JSON.MERGE'] = 'ReJSON-RL',
  ['JSON.ARRAPPEND'] = 'ReJSON-RL', ['JSON.NUMINCRBY'] = 'ReJSON-RL',
  ['JSON.STRAPPEND'] = 'ReJSON-RL',
}
-- at least this many arguments after the key
local MIN_ARGS = {
  RPUSH = 1, LPUSH = 1, RPOP = 1, LPOP = 1, RPUSHCAP = 2, ZADD = 2, ZREM = 1, ZINCRBY = 2,
  HSET = 2, HDEL = 1, HINCRBY = 2, HINCRBYFLOAT = 2, SADD = 1, SREM = 1, SET = 1,
  RESTORE = 1, ['JSON.SET'] = 2, ['JSON.MERGE'] = 2, ['JSON.ARRAPPEND'] = 2,
  ['JSON.NUMINCRBY'] = 2, ['JSON.STRAPPEND'] = 2,
}

-- What one call did to each key, for its digest (see chained_xadd): the items appended to
-- the right of a list, whether the key existed before the call's first op on it, the
-- keys changed any other way, and the keys whose last op deleted them (gone: no digest to
-- compute, which a rollback step meets for every document it un-creates). Reset at the
-- start of each call that journals.
local appended, existed, rewritten, deleted = {}, {}, {}, {}
-- The long lists a rollback step left unsettled (see chained_xadd), this call.
local unsettled = {}
-- The type a key is known to have after this call's last op on it (no TYPE to ask).
local kinds = {}
-- The ops whose text the writer vouches is RedisJSON's own serialization of it (see
-- fn_apply), and the text of such a whole-document JSON.SET that was this call's last op
-- on its key: that key's digest is its text's, with no JSON.GET to read it back.
local exact, texts = {}, {}

-- How many items this call appended, in all (a bound on AETHER.CHAIN's arguments).
local appended_items = 0

local function reset_tracking()
  appended, existed, rewritten, deleted, unsettled, kinds = {}, {}, {}, {}, {}, {}
  exact, texts = {}, {}
  appended_items = 0
end

-- `exists`: whether the key exists before this op (asked by the caller anyway)
local function track(op, trims, exists)
  local cmd, key = op[1], op[2]
  deleted[key] = cmd == 'DEL' or nil
  kinds[key] = nil
  texts[key] = nil
  if rewritten[key] then return end
  local first = (cmd == 'RPUSH' and 3) or (cmd == 'RPUSHCAP' and not trims and 4) or nil
  if first == nil then
    rewritten[key] = true
    appended[key] = nil
    return
  end
  -- only an append needs it (to extend the digest kept), as before its first op
  if existed[key] == nil then existed[key] = exists end
  local items = appended[key] or {}
  for i = first, #op do items[#items + 1] = op[i] end
  appended[key] = items
  appended_items = appended_items + #op - first + 1
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- TIME is frozen while a script runs, so work is measured in CPU time (os.clock: the
-- server's busy main thread), in milliseconds since `since`.
local function work_ms(since)
  return (os.clock() - since) * 1000
end

local function is_number(v)
  if type(v) == 'number' then return true end
  if type(v) ~= 'string' then return false end
  local lower = string.lower(v)
  if lower == 'inf' or lower == '+inf' or lower == '-inf' then return true end
  return tonumber(v) ~= nil
end

-- The encodings only one type has: a key in one needs no TYPE to know its family.
local ENCODED_FAMILY = { quicklist = 'list', skiplist = 'zset', intset = 'set' }

-- Refuse (with an error string) an op that would fail part-way, before it changes anything.
-- `enc`: the key's encoding (nil: the key does not exist, so any family fits).
local function check_op(op, enc)
  local cmd, key = op[1], op[2]
  local nargs = #op - 2
  if nargs < (MIN_ARGS[cmd] or 0) then
    return 'ERR aether: ' .. cmd .. ' needs at least ' .. MIN_ARGS[cmd] .. ' arguments'
  end
  for i = 3, #op do
    if type(op[i]) ~= 'string' and type(op[i]) ~= 'number' then
      return 'ERR aether: ' .. cmd .. ' argument ' .. (i - 2) .. ' is not a string'
    end
  end
  local want = FAMILY[cmd]
  if want and enc ~= nil and ENCODED_FAMILY[enc] ~= want then
    local t = ENCODED_FAMILY[enc] or redis.call('TYPE', key)['ok']
    if t ~= 'none' and t ~= want then
      return 'WRONGTYPE aether: ' .. cmd .. ' on ' .. key .. ', which holds a ' .. t
    end
  end
  if cmd == 'ZADD' then
    local first = op[3] == 'GT' and 4 or 3
    if (#op - first + 1) % 2 ~= 0 or #op < first + 1 then
      return 'ERR aether: ZADD needs score member pairs'
    end
    for i = first, #op, 2 do
      if not is_number(op[i]) then return 'ERR aether: ZADD score is not a number' end
    end
  elseif cmd == 'ZINCRBY' and not is_number(op[3]) then
    return 'ERR aether: ZINCRBY increment is not a number'
  elseif (cmd == 'RPOP' or cmd == 'LPOP' or cmd == 'RPUSHCAP') and not tonumber(op[3]) then
    return 'ERR aether: ' .. cmd .. ' count is not a number'
  elseif cmd == 'HSET' and nargs % 2 ~= 0 then
    return 'ERR aether: HSET needs field value pairs'
  end
  return nil
end

local function id_parts(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return tonumber(ms), tonumber(seq)
end

local function id_le(a, b)
  local ams, aseq = id_parts(a)
  local bms, bseq = id_parts(b)
  return ams < bms or (ams == bms and aseq <= bseq)
end

-- nil when the key does not exist (OBJECT ENCODING answers nil: no EXISTS first)
local function encoding(key)
  return redis.call('OBJECT', 'ENCODING', key) or nil
end

local function reversed(t, from)
  local out = {}
  for i = #t, (from or 1), -1 do out[#out + 1] = t[i] end
  return out
end

-- Calls cmd on key with values in order, CHUNK (x step) arguments at a time; the replies
-- that are arrays (an HMGET's) are returned joined, in order.
local function call_chunked(cmd, key, values, step)
  local per, joined = CHUNK * (step or 1), {}
  if #values > 0 and #values <= per then
    local reply = redis.call(cmd, key, unpack(values))
    if type(reply) == 'table' then return reply end
    return joined
  end
  for i = 1, #values, per do
    local reply = redis.call(cmd, key, unpack(values, i, math.min(i + per - 1, #values)))
    if type(reply) == 'table' then
      for _, v in ipairs(reply) do joined[#joined + 1] = v end
    end
  end
  return joined
end

local function args_of(op)
  local a = {}
  for i = 3, #op do a[#a + 1] = op[i] end
  return a
end

-- Apply op; return its structural inverse (a list of ops).
local function apply_structural(op)
  local cmd, key = op[1], op[2]
  if cmd == 'RPUSH' then
    call_chunked('RPUSH', key, args_of(op))
    return {{'RPOP', key, tostring(#op - 2)}}
  elseif cmd == 'LPUSH' then
    call_chunked('LPUSH', key, args_of(op))
    return {{'LPOP', key, tostring(#op - 2)}}
  elseif cmd == 'RPOP' or cmd == 'LPOP' then
    local popped = redis.call(cmd, key, op[3])
    if not popped then return {} end
    -- RPOP returns tail-first, LPOP head-first: pushing them back reversed restores order
    local back = reversed(popped)
    local inv = {cmd == 'RPOP' and 'RPUSH' or 'LPUSH', key}
    for _, v in ipairs(back) do inv[#inv + 1] = v end
    return {inv}
  elseif cmd == 'RPUSHCAP' then
    local cap = tonumber(op[3])
    local values = {}
    for i = 4, #op do values[#values + 1] = op[i] end
    call_chunked('RPUSH', key, values)
    local len = redis.call('LLEN', key)
    local inv = {{'RPOP', key, tostring(#values)}}
    if len > cap then
      local removed = redis.call('LRANGE', key, 0, len - cap - 1)
      redis.call('LTRIM', key, len - cap, -1)
      local back = {'LPUSH', key}
      for _, v in ipairs(reversed(removed)) do back[#back + 1] = v end
      inv[#inv + 1] = back
    end
    return inv
  elseif cmd == 'ZADD' then
    -- an optional leading GT flag: only raise existing scores (a "last seen" time)
    local first = op[3] == 'GT' and 4 or 3
    local added, restored = {'ZREM', key}, {'ZADD', key}
    for i = first, #op, 2 do
      local old = redis.call('ZSCORE', key, op[i + 1])
      if old then
        restored[#restored + 1] = old
        restored[#restored + 1] = op[i + 1]
      else
        added[#added + 1] = op[i + 1]
      end
    end
    if first == 4 then
      for i = 4, #op, 2 do redis.call('ZADD', key, 'GT', op[i], op[i + 1]) end
    else
      call_chunked('ZADD', key, args_of(op), 2)
    end
    local inv = {}
    if #added > 2 then inv[#inv + 1] = added end
    if #restored > 2 then inv[#inv + 1] = restored end
    return inv
  elseif cmd == 'ZINCRBY' then
    local old = redis.call('ZSCORE', key, op[4])
    redis.call('ZINCRBY', key, op[3], op[4])
    if old then return {{'ZADD', key, old, op[4]}} end
    return {{'ZREM', key, op[4]}}
  elseif cmd == 'ZREM' then
    local restored = {'ZADD', key}
    for i = 3, #op do
      local old = redis.call('ZSCORE', key, op[i])
      if old then
        restored[#restored + 1] = old
        restored[#restored + 1] = op[i]
      end
    end
    call_chunked('ZREM', key, args_of(op))
    if #restored > 2 then return {restored} end
    return {}
  end
  return redis.error_reply('ERR aether: not a structural op ' .. tostring(cmd))
end

-- RESTORE re-picks the compact encoding whenever the content fits, but a hash, set or
-- sorted set that once grew keeps its big encoding after shrinking. To restore such a
-- key exactly, add then remove a member too large for the compact encoding: Redis
-- converts up on the add and never converts back down on the removal.
local PAD = 'aether:encoding-pad:~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~'
local function force_encoding(key, want)
  if want == nil or encoding(key) == want then return end
  local t = redis.call('TYPE', key)['ok']
  if t == 'hash' and want == 'hashtable' and redis.call('HEXISTS', key, PAD) == 0 then
    redis.call('HSET', key, PAD, PAD)
    redis.call('HDEL', key, PAD)
  elseif t == 'set' and want == 'hashtable' and redis.call('SISMEMBER', key, PAD) == 0 then
    redis.call('SADD', key, PAD)
    redis.call('SREM', key, PAD)
  elseif t == 'zset' and want == 'skiplist' and not redis.call('ZSCORE', key, PAD) then
    redis.call('ZADD', key, 0, PAD)
    redis.call('ZREM', key, PAD)
  end
end

-- The exact pre-image of an existing key: its DUMP and its encoding.
local function image(key, enc)
  return {'RESTORE', key, redis.call('DUMP', key), enc}
end

-- Apply an op that is replaced wholesale (DEL, RESTORE) or image-journaled.
local function apply_plain(op)
  local cmd, key = op[1], op[2]
  if GUARD[cmd] then
    return  -- a replayed guard held when it was first applied
  elseif cmd == 'RESTORE' then
    redis.call('RESTORE', key, 0, op[3], 'REPLACE')
    force_encoding(key, op[4])
  elseif STRUCTURAL[cmd] then
    apply_structural(op)
  else
    redis.call(cmd, key, unpack(args_of(op)))
  end
end

-- Rebuild a list or sorted set from its content so that it takes the compact
-- (canonical) encoding again.
local function canonicalize(key)
  local t = redis.call('TYPE', key)['ok']
  if t == 'list' then
    local items = redis.call('LRANGE', key, 0, -1)
    redis.call('DEL', key)
    call_chunked('RPUSH', key, items)
  elseif t == 'zset' then
    local items = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    local pairs_ = {}
    for i = 1, #items, 2 do
      pairs_[#pairs_ + 1] = items[i + 1]
      pairs_[#pairs_ + 1] = items[i]
    end
    redis.call('DEL', key)
    call_chunked('ZADD', key, pairs_, 2)
  end
end

-- Whether op replaces a whole document (JSON.SET at the root without NX or XX): the key
-- then exists after it, as a document, whatever it held before.
local function sets_whole_document(op)
  return op[1] == 'JSON.SET' and #op == 4 and (op[3] == '$' or op[3] == '.')
end

local function note_whole_document(key, op)
  kinds[key] = 'ReJSON-RL'
  if exact[op] then texts[key] = op[4] end
end

-- Apply one op and return the list of ops that undoes it.
local function apply_op(op)
  local cmd, key = op[1], op[2]
  if type(cmd) ~= 'string' or type(key) ~= 'string' then
    return redis.error_reply('ERR aether: malformed op')
  end
  if GUARD[cmd] then
    if redis.call('EXISTS', key) == 1 then
      return redis.error_reply('ERR aether: exists ' .. key)
    end
    return {}
  end
  if not STRUCTURAL[cmd] and not IMAGE[cmd] then
    return redis.error_reply('ERR aether: unsupported op ' .. cmd)
  end
  local enc0 = encoding(key)
  local bad = check_op(op, enc0)
  if bad then return redis.error_reply(bad) end
  local trims = cmd == 'RPUSHCAP' and
    (enc0 and redis.call('LLEN', key) or 0) + (#op - 3) > tonumber(op[3])
  track(op, trims, enc0 ~= nil)
  if enc0 == nil then
    apply_plain(op)
    if sets_whole_document(op) then
      note_whole_document(key, op)
      return {{'DEL', key}}
    end
    if redis.call('EXISTS', key) == 1 then return {{'DEL', key}} end
    return {}
  end
  if IMAGE[cmd] then
    local pre = image(key, enc0)
    apply_plain(op)
    if sets_whole_document(op) then note_whole_document(key, op) end
    return {pre}
  end
  if cmd == 'RPUSHCAP' then
    local cap = tonumber(op[3])
    if not cap or cap < 1 then return redis.error_reply('ERR aether: bad cap') end
    if trims and (enc0 ~= 'listpack' or (#op - 3) > cap) then
      local pre = image(key, enc0)
      apply_plain(op)
      return {pre}
    end
  end
  local inv = apply_structural(op)
  -- a push never turns a quicklist back into a listpack (only removals do)
  if enc0 == 'quicklist' and (cmd == 'RPUSH' or cmd == 'LPUSH') then return inv end
  local enc1 = encoding(key)
  if enc1 == nil or enc1 == enc0 then return inv end
  -- The encoding changed: revert, rebuild the exact pre-image, re-apply.
  for _, back in ipairs(inv) do apply_plain(back) end
  if enc0 == 'listpack' then canonicalize(key) end
  local pre = image(key, enc0)
  apply_plain(op)
  return {pre}
end

local function error_text(e)
  if type(e) == 'table' and e.err then return e.err end
  return tostring(e)
end

-- Apply ops in order, all or nothing: on an error the ops already applied are undone.
-- Returns the inverse ops, in the order they must be applied, or nil and an error reply.
local function undo_all(inverse)
  for i = #inverse, 1, -1 do
    for _, back in ipairs(inverse[i]) do apply_plain(back) end
  end
end

local function flatten(inverse)
  local flat = {}
  for i = #inverse, 1, -1 do
    for _, back in ipairs(inverse[i]) do flat[#flat + 1] = back end
  end
  return flat
end

local function failure(inv)
  local msg = error_text(inv)
  if string.sub(msg, 1, 4) ~= 'ERR ' and not string.find(msg, '^%u+ ') then
    msg = 'ERR ' .. msg
  end
  return redis.error_reply(msg)
end

-- Apply one op, collecting its inverse; nil, or an error reply when it failed.
local function try_op(op, inverse)
  local ok, inv = pcall(apply_op, op)
  if not ok or (type(inv) == 'table' and inv.err) then return failure(inv) end
  inverse[#inverse + 1] = inv
  return nil
end

local function apply_all(ops)
  local inverse = {}
  for _, op in ipairs(ops) do
    local err = try_op(op, inverse)
    if err then
      undo_all(inverse)
      return nil, err
    end
  end
  return flatten(inverse), nil
end

local function validate(ops, prefix)
  if type(ops) ~= 'table' or #ops == 0 then
    return redis.error_reply('ERR aether: no operations')
  end
  for _, op in ipairs(ops) do
    if type(op) ~= 'table' or type(op[2]) ~= 'string' then
      return redis.error_reply('ERR aether: malformed op')
    end
    if string.sub(op[2], 1, #prefix) ~= prefix then
      return redis.error_reply('ERR aether: key outside the namespace: ' .. op[2])
    end
    if not STRUCTURAL[op[1]] and not IMAGE[op[1]] and not GUARD[op[1]] then
      return redis.error_reply('ERR aether: unsupported op ' .. tostring(op[1]))
    end
  end
  return nil
end

-- The keys the ops touch, in order of first touch.
local function touched(ops)
  local seen, out = {}, {}
  for _, op in ipairs(ops) do
    if not seen[op[2]] then
      seen[op[2]] = true
      out[#out + 1] = op[2]
    end
  end
  return out
end

local GENESIS = '0000000000000000000000000000000000000000'

-- The prefixes of short values ('<length>:') are made once, when the library loads: a
-- number turned into a string in every call cost more than the hash itself (library 24;
-- the framing is unchanged).
local LONG_VALUE = 1024
local SHORT_PREFIX = {}
for n = 0, LONG_VALUE do SHORT_PREFIX[n] = n .. ':' end

local function length_prefix(len)
  return SHORT_PREFIX[len] or (len .. ':')
end

-- head, then each value prefixed with its length ('<length>:<value>'), so no two sequences
-- frame to the same string. Built by one concatenation: every intermediate copy costs the
-- allocation and the collector's work.
local function framed(values, head)
  local out, n = {head}, 1
  for i = 1, #values do
    local v = values[i]
    out[n + 1] = length_prefix(#v)
    out[n + 2] = v
    n = n + 2
  end
  return table.concat(out)
end

-- An entry's framing: as framed, but a value longer than LONG_VALUE stands for its sha1
-- ('<length>#<sha1>'): a rollback step's inverses run to megabytes, and copying them into
-- one string to hash cost more than the hash. ':' or '#' after the length keeps the framing
-- unambiguous; an entry without long values frames as before (chain.py's entry_hash).
local framing = {}  -- reused by every call: a new table each time cost its growth and collection

local function entry_framed(values, head)
  local out, n = framing, 1
  out[1] = head
  for i = 1, #values do
    local v = values[i]
    local len = #v
    if len > LONG_VALUE then
      out[n + 1] = len .. '#' .. redis.sha1hex(v)
      n = n + 1
    else
      out[n + 1] = SHORT_PREFIX[len]
      out[n + 2] = v
      n = n + 2
    end
  end
  return table.concat(out, '', 1, n)
end

-- Whether the server has the aether_chain module (aether/server/aether_chain.c): asked once
-- per library load, as a module loads only with the server. Its commands do in C what
-- chain_append (AETHER.CHAIND) and chained_xadd (AETHER.CHAIN) do here, writing the same
-- entries (tests/test_chain_module.py); they decline, having changed nothing, with an error
-- starting AETHERCHAIN (no head in the digests hash yet: an older library's journal, or a
-- new one, which the Lua way moves or starts).
local chain_module = nil
-- Past this many arguments AETHER.CHAIN is not asked (unpack's limit is the C stack's).
local MODULE_ARGS_MAX = 7000

local function has_chain_module()
  if chain_module == nil then
    chain_module = type(redis.call('COMMAND', 'INFO', 'aether.chain')[1]) == 'table'
  end
  return chain_module
end

-- A list's digest folds its items in order, so an append only extends it:
-- d(empty) = LIST_BASE, d(items + x) = sha1(d(items) .. framed(x)).
local LIST_BASE = 'aether-list-digest'

local function list_digest(from, items)
  local d = from
  for _, item in ipairs(items) do d = redis.sha1hex(d .. length_prefix(#item) .. item) end
  return d
end

-- The list's items from `start` (0-based), `count` of them (-1: to its end), folded onto
-- `from`; and how many were folded. In C when the module is there (a long list's fold
-- cost Lua a concatenation and a string per item).
local function list_fold_range(key, from, start, count)
  if has_chain_module() then
    local r = redis.call('AETHER.LISTDIGEST', key, from, start, count)
    return r[1], r[2]
  end
  local stop = count < 0 and -1 or start + count - 1
  local items = redis.call('LRANGE', key, start, stop)
  return list_digest(from, items), #items
end

-- sha1 of a type and a key's content as the values `body` (the framing every digest uses).
local function typed_digest(t, body)
  return redis.sha1hex(framed(body, t .. '|'))
end

-- sha1 of a key's type and canonical content ('' when it does not exist): equal for equal
-- content whatever its encoding or history (hash fields and set members sorted).
local function content_digest(key, known_type)
  local t = known_type or redis.call('TYPE', key)['ok']
  if t == 'none' then return '' end
  local body
  if t == 'string' then
    body = {redis.call('GET', key)}
  elseif t == 'hash' then
    local raw, names, by = redis.call('HGETALL', key), {}, {}
    for i = 1, #raw, 2 do
      names[#names + 1] = raw[i]
      by[raw[i]] = raw[i + 1]
    end
    table.sort(names)
    body = {}
    for _, n in ipairs(names) do
      body[#body + 1] = n
      body[#body + 1] = by[n]
    end
  elseif t == 'set' then
    body = redis.call('SMEMBERS', key)
    table.sort(body)
  elseif t == 'zset' then
    body = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  elseif t == 'list' then
    return (list_fold_range(key, LIST_BASE, 0, -1))
  elseif t == 'ReJSON-RL' then
    body = {redis.call('JSON.GET', key)}
  else
    body = {redis.call('DUMP', key)}
  end
  return typed_digest(t, body)
end

-- The head lives in the digests hash (library 25): one read and one write per change fewer
-- than a key of its own. A journal written by an older library keeps its head at
-- <journal>:head until its next entry moves it here (`legacy_head`).
local HEAD_FIELD = '(head)'
local legacy_head = false

local function head_hash(raw)
  -- "<id> <h>", h a sha1's 40 hex digits: cut, not matched (a pattern cost more than the
  -- head's read)
  if raw and #raw > 41 and string.byte(raw, -41) == 32 then return string.sub(raw, -40) end
  return GENESIS
end

-- The head's hash, given the head field's value (false when absent: an older library's
-- key, or the genesis).
local function head_or_legacy(journal, raw)
  legacy_head = false
  if raw then return head_hash(raw) end
  local old = redis.call('GET', journal .. ':head')
  legacy_head = old ~= false
  return head_hash(old)
end

local function chain_head(journal)
  return head_or_legacy(journal, redis.call('HGET', journal .. ':digests', HEAD_FIELD))
end

-- Record the head ("<id> <h>") with the keys' digests `kept` (flat pairs), in one write.
-- `digests`: <journal>:digests when the caller has it already.
local function move_head(journal, kept, id, h, digests)
  kept[#kept + 1] = HEAD_FIELD
  kept[#kept + 1] = id .. ' ' .. h
  call_chunked('HSET', digests or (journal .. ':digests'), kept, 2)
  if legacy_head then
    redis.call('DEL', journal .. ':head')
    legacy_head = false
  end
end

-- The digest a key is left with by this call ('' when gone). Appends to a list with a
-- settled digest extend it in O(items). With `defer` (a rollback step), any other change to
-- a list longer than SETTLE_AT is recorded UNSETTLED and digested by the rollback's
-- settling steps (fn_rollback_step), a page at a time: folding a long list at every step
-- would keep Redis busy far past the step's budget.
local UNSETTLED = '~'
local SETTLE_AT = 1000
local SETTLE_PAGE = 1000

-- `known`: the digest kept for the key before this call (false: none), read by the caller
-- (with the head, in one HMGET) for the lists this call only appended to.
local function left_digest(key, defer, known)
  if deleted[key] then return '' end
  local items = appended[key]
  local before = LIST_BASE
  if items and existed[key] then before = known end  -- false: unknown
  if before == UNSETTLED then before = false end
  if items and before then
    return list_digest(before, items)  -- appends only (so a list): O(items), not O(list)
  end
  local text = texts[key]
  if text then return redis.sha1hex('ReJSON-RL|' .. length_prefix(#text) .. text) end
  local t = kinds[key] or redis.call('TYPE', key)['ok']
  if defer and t == 'list' and redis.call('LLEN', key) > SETTLE_AT then
    unsettled[#unsettled + 1] = key
    return UNSETTLED
  end
  return content_digest(key, t)
end

local function keep_digest(digests, key, digest)
  if digest == '' then
    redis.call('HDEL', digests, key)
  else
    redis.call('HSET', digests, key, digest)
  end
end

-- The reply of a module command: the entry's id, or nil when it declined.
local function module_reply(added)
  if type(added) == 'table' and added.err then
    if string.sub(added.err, 1, 11) == 'AETHERCHAIN' then return nil end
    error(added)
  end
  return added
end

-- The arguments both module commands start with: journal digests id nfields field...; and
-- how many there are.
local function module_args(journal, id, fields)
  local args, n = {journal, journal .. ':digests', id, #fields}, 4
  for i = 1, #fields do args[n + i] = fields[i] end
  return args, n + #fields
end

-- chain_append by AETHER.CHAIND, with 'd' packed here; nil: the Lua way.
local function module_append(journal, id, fields, d)
  if id ~= '*' or not has_chain_module() then return nil end
  local args, n = module_args(journal, id, fields)
  args[n + 1] = cmsgpack.pack(d)
  return module_reply(redis.pcall('AETHER.CHAIND', unpack(args, 1, n + 1)))
end

-- Append fields as the chain's next entry with 'd', the flat key/digest pairs it left (also
-- kept in <journal>:digests), the predecessor's hash ('p') and the entry's ('h'); moves the
-- head.
-- `prev`: the head's hash when the caller read it already.
local function chain_append(journal, id, fields, d, prev)
  local added = module_append(journal, id, fields, d)
  if added then return added end
  -- one HSET and one HDEL for all the keys (a rollback step's hundreds): fewer calls
  local kept, gone = {}, {}
  for i = 1, #d, 2 do
    if d[i + 1] == '' then
      gone[#gone + 1] = d[i]
    else
      kept[#kept + 1] = d[i]
      kept[#kept + 1] = d[i + 1]
    end
  end
  local digests = journal .. ':digests'
  if #gone > 0 then call_chunked('HDEL', digests, gone) end
  fields[#fields + 1] = 'd'
  fields[#fields + 1] = cmsgpack.pack(d)
  prev = prev or chain_head(journal)
  local h = redis.sha1hex(entry_framed(fields, prev))
  fields[#fields + 1] = 'p'
  fields[#fields + 1] = prev
  fields[#fields + 1] = 'h'
  fields[#fields + 1] = h
  local added = redis.call('XADD', journal, id, unpack(fields))
  move_head(journal, kept, added, h, digests)
  return added
end

-- The write's entry appended by AETHER.CHAIN, which computes the keys' digests as
-- left_digest does; nil when the module is absent or declines.
local function module_xadd(journal, id, fields, keys_touched)
  if id ~= '*' or not has_chain_module() then return nil end
  -- the arguments bounded first: a write past the limit digests its keys once, the Lua way
  if 4 + #fields + 3 * #keys_touched + appended_items > MODULE_ARGS_MAX then return nil end
  local args, n = module_args(journal, id, fields)
  for _, key in ipairs(keys_touched) do
    local items = appended[key]
    if deleted[key] then
      args[n + 1], args[n + 2] = key, 'G'
      n = n + 2
    elseif items then
      args[n + 1], args[n + 2], args[n + 3] = key, existed[key] and 'E' or 'N', #items
      n = n + 3
      for i = 1, #items do args[n + i] = items[i] end
      n = n + #items
    elseif texts[key] then
      args[n + 1], args[n + 2], args[n + 3] = key, 'T', texts[key]
      n = n + 3
    else
      args[n + 1], args[n + 2], args[n + 3] = key, 'P', content_digest(key, kinds[key])
      n = n + 3
    end
  end
  return module_reply(redis.pcall('AETHER.CHAIN', unpack(args, 1, n)))
end

-- Append fields as the chain's next entry, digesting the keys it touched. The head and the
-- digests kept for the lists only appended to are read in one HMGET.
local function chained_xadd(journal, id, fields, keys_touched, defer)
  if not defer then
    local added = module_xadd(journal, id, fields, keys_touched)
    if added then return added end
  end
  local asked, at = {HEAD_FIELD}, {}
  for _, key in ipairs(keys_touched) do
    if appended[key] and existed[key] and not deleted[key] then
      asked[#asked + 1] = key
      at[key] = #asked
    end
  end
  local known = call_chunked('HMGET', journal .. ':digests', asked)
  local d = {}
  for _, key in ipairs(keys_touched) do
    d[#d + 1] = key
    d[#d + 1] = left_digest(key, defer, at[key] and known[at[key]] or false)
  end
  return chain_append(journal, id, fields, d, head_or_legacy(journal, known[1]))
end

-- Append an entry; `archived`: an archive follows the namespace, keep the forward values.
local function xadd(journal, archived, id, actor, reason, fwd, inv, extra, defer)
  local fields, keys_touched = {'a', actor, 'r', reason}, touched(fwd)
  if archived then
    fields[#fields + 1] = 'f'
    fields[#fields + 1] = cmsgpack.pack(fwd)
  else
    fields[#fields + 1] = 'k'
    fields[#fields + 1] = cmsgpack.pack(keys_touched)
  end
  fields[#fields + 1] = 'i'
  fields[#fields + 1] = cmsgpack.pack(inv)
  for _, v in ipairs(extra or {}) do fields[#fields + 1] = v end
  return chained_xadd(journal, id, fields, keys_touched, defer)
end

local HELD = 'TRYAGAIN aether: a rollback is in progress on this namespace; writes wait for it'
local ERASING = 'TRYAGAIN aether: an erasure is in progress on this namespace; writes wait for it'

-- The refusal while the write hold exists: a rollback's, or an erasure's (kind 'erase').
-- An erasure's own changes pass: they carry the token its hold records. Once its journal
-- is rebuilt, an erasure opens writes again ('writes' = 'open') for the rest of its work.
local function held(hold, token, exists)
  if exists == false or (exists == nil and redis.call('EXISTS', hold) == 0) then return nil end
  local kind = redis.call('HGET', hold, 'kind')
  if kind ~= 'erase' then return redis.error_reply(HELD) end
  if redis.call('HGET', hold, 'writes') == 'open' then return nil end
  if token ~= nil and token ~= '' and redis.call('HGET', hold, 'token') == token then
    return nil
  end
  return redis.error_reply(ERASING)
end

-- KEYS[1] journal, KEYS[2] write hold, KEYS[3] archive cursor, KEYS[4..] the keys the ops
-- touch (declared). ARGV: namespace prefix, actor, reason, msgpack(ops), the token of the
-- erasure holding writes (only the erasure itself passes it), and the positions (1-based,
-- comma-separated) of the whole-document JSON.SET ops whose text is exactly what JSON.GET
-- will return (aether.store.json_text.redisjson_exact says so for the texts it writes). The
-- library takes that claim on trust: a wrong one digests the text RedisJSON did not keep,
-- so `journal verify` names the key as edited (a false alarm, never a missed edit).
local function fn_apply(keys, args)
  reset_tracking()
  -- the hold and the archive's cursor asked in one call: neither exists, most of the time
  local either, archived = redis.call('EXISTS', keys[2], keys[3]) > 0, false
  if either then
    local hold = redis.call('EXISTS', keys[2]) == 1
    local refused = held(keys[2], args[5], hold)
    if refused then return refused end
    archived = not hold or redis.call('EXISTS', keys[3]) == 1
  end
  local prefix, actor, reason = args[1], args[2], args[3]
  local ok, ops = pcall(cmsgpack.unpack, args[4])
  if not ok then return redis.error_reply('ERR aether: ops are not msgpack') end
  local bad = validate(ops, prefix)
  if bad then return bad end
  for item in string.gmatch(args[6] or '', '[^,]+') do
    local i = string.match(item, '^%d+$') and tonumber(item)
    if i and ops[i] then exact[ops[i]] = true end
  end
  local inv, err = apply_all(ops)
  if err then return err end
  return xadd(keys[1], archived, '*', actor, reason, ops, inv)
end

local function last_id(journal)
  local last = redis.call('XREVRANGE', journal, '+', '-', 'COUNT', 1)
  if #last == 0 then return '0-0' end
  return last[1][1]
end

-- KEYS: journal, checkpoint hash, checkpoints zset, write hold
-- ARGV: id, created_at (ms), label, reason, actor
local function fn_checkpoint(keys, args)
  local refused = held(keys[4], nil)
  if refused then return refused end
  if redis.call('EXISTS', keys[2]) == 1 then
    return redis.error_reply('ERR aether: checkpoint id exists ' .. args[1])
  end
  local pos = last_id(keys[1])
  redis.call('HSET', keys[2], 'id', args[1], 'created_at', args[2], 'label', args[3],
    'reason', args[4], 'actor', args[5], 'journal_pos', pos, 'chain', chain_head(keys[1]))
  redis.call('ZADD', keys[3], args[2], args[1])
  return pos
end

local function entry_field(fields, name)
  for i = 1, #fields, 2 do
    if fields[i] == name then return fields[i + 1] end
  end
  return nil
end

-- Rollback, step 1. KEYS: journal, admin lock, write hold, target checkpoint hash
-- ARGV: lock token, target journal position, actor, reason, target label, replace,
-- id of the checkpoint taken before (kept in the hold, to finish an interrupted run)
-- Sets the write hold (the run's cursor); returns 1, or 0 when nothing follows the
-- target. With replace = '1' an existing hold is replaced (aborting a failed run).
local function fn_rollback_begin(keys, args)
  local journal, hold, target = keys[1], keys[3], args[2]
  if redis.call('GET', keys[2]) ~= args[1] then
    return redis.error_reply('ERR aether: admin lock not held')
  end
  if redis.call('EXISTS', hold) == 1 and args[6] ~= '1' then
    return redis.error_reply('ERR aether: an interrupted rollback must be finished first')
  end
  if redis.call('HGET', keys[4], 'journal_pos') ~= target then
    return redis.error_reply('ERR aether: checkpoint was pruned meanwhile')
  end
  local top = last_id(journal)
  if top == '0-0' or id_le(top, target) then
    redis.call('DEL', hold)
    return 0
  end
  redis.call('DEL', hold)
  redis.call('HSET', hold, 'target', target, 'cur', top, 'opi', 0, 'undone', 0, 'ops', 0,
    'parts', 0, 'last', '', 'actor', args[3], 'reason', args[4], 'label', args[5],
    'pre', args[7], 'started', now_ms())
  return 1
end

-- A rollback's settling, once its ops are applied: digests the lists its steps left
-- UNSETTLED, a page of SETTLE_PAGE items at a time while the budget lasts (writes stay
-- held, so a list does not change between pages), the progress kept in the hold ('sk' the
-- list's place in `pending`, 'so' the items folded, 'sd' their fold). The lists settled by
-- this call are chained as one entry without ops ('settled': how many). Returns whether
-- every list is settled, and the last entry's id.
local function settle_step(journal, hold, h, pending, archived, last, t0, budget)
  local idx, off, partial = tonumber(h.sk or '1'), tonumber(h.so or '0'), h.sd or LIST_BASE
  local d = {}
  while idx <= #pending do
    local key = pending[idx]
    local finished_key, t = true, redis.call('TYPE', key)['ok']
    if t == 'list' then
      local folded
      partial, folded = list_fold_range(key, partial, off, SETTLE_PAGE)
      off = off + folded
      finished_key = folded < SETTLE_PAGE
    else
      partial = content_digest(key, t)  -- no longer a list (or gone): small, at once
    end
    if finished_key then
      d[#d + 1] = key
      d[#d + 1] = partial
      idx, off, partial = idx + 1, 0, LIST_BASE
    end
    if work_ms(t0) >= budget then break end
  end
  if #d > 0 then
    local fields = {'a', h.actor, 'r', h.reason, archived and 'f' or 'k', cmsgpack.pack({}),
      'i', cmsgpack.pack({}), 'to', h.label, 'settled', tostring(#d / 2)}
    last = chain_append(journal, '*', fields, d)
  end
  if idx > #pending then return true, last end
  redis.call('HSET', hold, 'sk', idx, 'so', off, 'sd', partial, 'last', last)
  return false, last
end

-- Rollback, step 2, called until it answers 'done'. KEYS: journal, admin lock, write hold,
-- archive cursor. ARGV: lock token, budget (ms). Applies the journal's inverses from the
-- hold's cursor down towards the target for at most the budget, journals what it applied
-- as one entry (so undo reverses it) and moves the cursor. Returns {state, last entry id,
-- entries undone, ops applied}; on an error this step's own changes are undone and the
-- hold stays.
local function fn_rollback_step(keys, args)
  reset_tracking()
  local journal, hold = keys[1], keys[3]
  if redis.call('GET', keys[2]) ~= args[1] then
    return redis.error_reply('ERR aether: admin lock not held')
  end
  local h = {}
  local raw = redis.call('HGETALL', hold)
  for i = 1, #raw, 2 do h[raw[i]] = raw[i + 1] end
  if h.target == nil then return redis.error_reply('ERR aether: no rollback in progress') end
  local budget, t0 = tonumber(args[2]), os.clock()
  local cur, opi, undone = h.cur, tonumber(h.opi), tonumber(h.undone)
  local fwd, inverse, finished, out_of_time = {}, {}, false, false
  while not out_of_time do
    -- one entry at a time: a page of big entries would spend the budget on reading alone
    local batch = redis.call('XREVRANGE', journal, cur, '(' .. h.target, 'COUNT', 1)
    if #batch == 0 then
      finished = true
      break
    end
    for _, entry in ipairs(batch) do
      local ops = cmsgpack.unpack(entry_field(entry[2], 'i'))
      for k = opi + 1, #ops do
        local err = try_op(ops[k], inverse)
        if err then
          undo_all(inverse)
          return err
        end
        fwd[#fwd + 1] = ops[k]
        opi = k
        if work_ms(t0) >= budget then
          out_of_time = true
          break
        end
      end
      if opi >= #ops then
        undone, cur, opi = undone + 1, '(' .. entry[1], 0
      else
        cur = entry[1]
      end
      if out_of_time then break end
    end
  end
  local last, archived = h.last, redis.call('EXISTS', keys[4]) == 1
  if #fwd > 0 then
    last = xadd(journal, archived, '*', h.actor, h.reason, fwd, flatten(inverse),
      {'to', h.label, 'part', tostring(tonumber(h.parts) + 1)}, true)
  end
  local ops = tonumber(h.ops) + #fwd
  local pending = h.unsettled and cjson.decode(h.unsettled) or {}
  local seen = {}
  for _, key in ipairs(pending) do seen[key] = true end
  for _, key in ipairs(unsettled) do
    if not seen[key] then
      seen[key] = true
      pending[#pending + 1] = key
    end
  end
  redis.call('HSET', hold, 'cur', cur, 'opi', opi, 'undone', undone, 'ops', ops,
    'parts', tonumber(h.parts) + (#fwd > 0 and 1 or 0), 'last', last,
    'unsettled', #pending > 0 and cjson.encode(pending) or '[]')
  if finished and not out_of_time then
    local settled
    settled, last = settle_step(journal, hold, h, pending, archived, last, t0, budget)
    if settled then
      redis.call('DEL', hold)
      return {'done', last, undone, ops}
    end
  end
  return {'more', last, undone, ops}
end

-- KEYS: journal, then every key the entry's ops touch (declared)
-- ARGV: namespace prefix, entry id, number of skipped keys, skipped keys..., then the
-- entry's field/value pairs (as archived). Re-applies the entry's forward ops, all or
-- nothing, except on the skipped keys (a snapshot already holds their state after this
-- entry), and re-appends the entry under its own id.
local function fn_replay(keys, args)
  local prefix, id, nskip = args[1], args[2], tonumber(args[3])
  local skip, fields = {}, {}
  for i = 4, 3 + nskip do skip[args[i]] = true end
  for i = 4 + nskip, #args do fields[#fields + 1] = args[i] end
  local fwd = entry_field(fields, 'f')
  if not fwd then
    return redis.error_reply('ERR aether: entry ' .. id .. ' was written while no archive ' ..
      'followed the namespace and cannot be replayed')
  end
  local ok, ops = pcall(cmsgpack.unpack, fwd)
  if not ok or type(ops) ~= 'table' then
    return redis.error_reply('ERR aether: entry ' .. id .. ' has unreadable ops')
  end
  local todo = {}
  for _, op in ipairs(ops) do
    if type(op) == 'table' and not skip[op[2]] then todo[#todo + 1] = op end
  end
  if #todo > 0 then
    local bad = validate(todo, prefix)
    if bad then return bad end
    local _, err = apply_all(todo)
    if err then return err end
  end
  -- digests as the entry recorded them where it left a list unsettled or settled lists
  local recorded, settles = {}, entry_field(fields, 'settled') ~= nil
  local d = entry_field(fields, 'd')
  if d then
    local pairs_ = cmsgpack.unpack(d)
    for i = 1, #pairs_, 2 do recorded[pairs_[i]] = pairs_[i + 1] end
  end
  for _, key in ipairs(touched(todo)) do
    if recorded[key] == UNSETTLED then
      keep_digest(keys[1] .. ':digests', key, UNSETTLED)
    else
      keep_digest(keys[1] .. ':digests', key, content_digest(key))
    end
  end
  if settles then
    for key in pairs(recorded) do
      if not skip[key] then keep_digest(keys[1] .. ':digests', key, content_digest(key)) end
    end
  end
  local added = redis.call('XADD', keys[1], id, unpack(fields))
  local h = entry_field(fields, 'h')
  if h then
    chain_head(keys[1])  -- notes an older library's head key, which move_head retires
    move_head(keys[1], {}, added, h)
  end
  return added
end

-- KEYS: journal; ARGV: state keys. Each key's digest as the chain records it ('' when
-- the key does not exist): what `journal verify` compares the live state with.
local function fn_digests(keys, args)
  local out = {}
  for i, key in ipairs(args) do out[i] = content_digest(key) end
  return out
end

-- KEYS: journal; ARGV: SCAN cursor, match pattern, msgpack(excluded names),
-- msgpack(excluded prefixes), budget (ms). One page of a snapshot: SCANs from the cursor
-- until the budget is spent or the scan ends. Returns {next cursor ('0': done), journal
-- position now, key1, dump1, key2, dump2, ...}; every DUMP of the page is the key's
-- state at that position.
local function fn_snapshot(keys, args)
  local names, prefixes = {}, cmsgpack.unpack(args[4])
  for _, n in ipairs(cmsgpack.unpack(args[3])) do names[n] = true end
  local budget, t0 = tonumber(args[5]), os.clock()
  local out = {'0', last_id(keys[1])}
  local cursor = args[1]
  repeat
    local page = redis.call('SCAN', cursor, 'MATCH', args[2], 'COUNT', 200)
    cursor = page[1]
    for _, key in ipairs(page[2]) do
      local skip = names[key]
      if not skip then
        for _, p in ipairs(prefixes) do
          if string.sub(key, 1, #p) == p then skip = true; break end
        end
      end
      if not skip and redis.call('TYPE', key)['ok'] ~= 'none' then
        out[#out + 1] = key
        out[#out + 1] = redis.call('DUMP', key)
      end
    end
  until cursor == '0' or work_ms(t0) >= budget
  out[1] = cursor
  return out
end

redis.register_function{function_name = 'aether_version', callback = function() return VERSION end,
  flags = {'no-writes'}}
redis.register_function('aether_apply', fn_apply)
redis.register_function('aether_checkpoint', fn_checkpoint)
redis.register_function('aether_rollback_begin', fn_rollback_begin)
redis.register_function('aether_rollback_step', fn_rollback_step)
redis.register_function('aether_replay', fn_replay)
redis.register_function{function_name = 'aether_snapshot', callback = fn_snapshot,
  flags = {'no-writes'}}
redis.register_function{function_name = 'aether_digests', callback = fn_digests,
  flags = {'no-writes'}}
