#!lua name=aether_reads
--[[
aether's read-only Functions for retrieval: a search's fields in one round trip, the
turns around daily entries, and the entity graph's expansion. None writes; each
declares a key of its namespace, so a cluster routes it by the namespace's slot (the
graph's expansion reads keys found along the graph, all of that namespace and slot).
A change here leaves the journal's library (journal.lua) and its version alone.
]]

local VERSION = '1'

-- KEYS: JSON documents; ARGV: JSON paths. One reply per key: JSON.GET of those paths
-- (nil when the key is missing). A read-only single round trip for search results.
local function fn_get_fields(keys, args)
  local out = {}
  for i, key in ipairs(keys) do
    if redis.call('EXISTS', key) == 1 then
      out[i] = redis.call('JSON.GET', key, unpack(args))
    else
      out[i] = false
    end
  end
  return out
end

-- The turns around some daily entries, in one call: for each (list, id) pair, the ids at
-- most `reach` places before and after the id in that day's list, and where the window
-- starts, or false when the id is not in the list.
-- KEYS: the day lists. ARGV: reach, then pairs of (1-based index into KEYS, entry id).
local function fn_neighbours(keys, args)
  local reach, out = tonumber(args[1]), {}
  for i = 2, #args - 1, 2 do
    local key = keys[tonumber(args[i])]
    local pos = redis.call('LPOS', key, args[i + 1])
    if pos then
      local first = math.max(0, pos - reach)
      out[#out + 1] = {first, pos, redis.call('LRANGE', key, first, pos + reach)}
    else
      out[#out + 1] = false
    end
  end
  return out
end

-- Breadth-first expansion of the entity graph, in one call: up to `depth` hops along
-- outgoing and incoming relations (the `per` heaviest of each node), at most `maxn` nodes.
-- KEYS: the graph's name index (routes the call to the namespace's slot; the keys read
-- are that namespace's, in the same slot). ARGV: key prefix, depth, per, maxn, seed
-- ids... Returns {edges, nodes}: an edge is {source, type, target, weight, hop}; a node
-- is {id, hop, HGETALL of the entity}.
local function fn_expand(keys, args)
  local prefix, depth, per, maxn = args[1], tonumber(args[2]), tonumber(args[3]), tonumber(args[4])
  local seen, order, frontier, edges = {}, {}, {}, {}
  for i = 5, #args do
    if seen[args[i]] == nil then
      seen[args[i]] = 0
      order[#order + 1] = args[i]
      frontier[#frontier + 1] = args[i]
    end
  end
  for hop = 1, depth do
    local nextf = {}
    for _, id in ipairs(frontier) do
      for _, dir in ipairs({'out', 'in'}) do
        local rows = redis.call('ZREVRANGE', prefix .. 'rel:' .. dir .. ':' .. id, 0, per - 1,
          'WITHSCORES')
        for j = 1, #rows, 2 do
          local member, weight = rows[j], rows[j + 1]
          local sep = string.find(member, '\31', 1, true)
          if sep then
            local rtype, other = string.sub(member, 1, sep - 1), string.sub(member, sep + 1)
            if dir == 'out' then
              edges[#edges + 1] = {id, rtype, other, weight, hop}
            else
              edges[#edges + 1] = {other, rtype, id, weight, hop}
            end
            if seen[other] == nil and #order < maxn then
              seen[other] = hop
              order[#order + 1] = other
              nextf[#nextf + 1] = other
            end
          end
        end
      end
    end
    frontier = nextf
  end
  local nodes = {}
  for _, id in ipairs(order) do
    nodes[#nodes + 1] = {id, seen[id], redis.call('HGETALL', prefix .. 'entity:' .. id)}
  end
  return {edges, nodes}
end

redis.register_function{function_name = 'aether_reads_version',
  callback = function() return VERSION end, flags = {'no-writes'}}
redis.register_function{function_name = 'aether_get_fields', callback = fn_get_fields,
  flags = {'no-writes'}}
redis.register_function{function_name = 'aether_neighbours', callback = fn_neighbours,
  flags = {'no-writes'}}
redis.register_function{function_name = 'aether_expand', callback = fn_expand,
  flags = {'no-writes'}}
