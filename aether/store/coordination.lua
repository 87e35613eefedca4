#!lua name=aether_coordination
--[[
aether's Functions for coordination between processes: a lock released only by its
holder, and an inbox message answered exactly once. Neither touches journaled state.
]]

local VERSION = '1'

-- KEYS: lock; ARGV: token. Deletes the lock only when the token matches.
local function fn_unlock(keys, args)
  if redis.call('GET', keys[1]) == args[1] then return redis.call('DEL', keys[1]) end
  return 0
end

-- Answer an inbox message exactly once: acknowledge it and add the reply to the outbox
-- in one atomic step. When the message is no longer pending (another consumer answered
-- it), nothing is added and nil is returned.
-- KEYS: inbox, outbox. ARGV: group, message id, outbox max length, field, value, ...
local function fn_reply(keys, args)
  if redis.call('XACK', keys[1], args[1], args[2]) == 0 then return nil end
  local fields = {}
  for i = 4, #args do fields[#fields + 1] = args[i] end
  return redis.call('XADD', keys[2], 'MAXLEN', '~', args[3], '*', unpack(fields))
end

redis.register_function{function_name = 'aether_coordination_version',
  callback = function() return VERSION end, flags = {'no-writes'}}
redis.register_function('aether_unlock', fn_unlock)
redis.register_function('aether_reply', fn_reply)
