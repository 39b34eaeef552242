-- A small, bounded regular-expression engine for permission rules.
--
-- The sandbox has no regex library and Lua patterns are not regexes (no
-- alternation), so rules such as /mcp__(gh|gl)__.*/ need their own engine.
-- It compiles a regex into a flat program of plain tables (so a parsed rule
-- can be stored, converted to Go and back, and memoized) and runs it as a
-- Thompson NFA turned lazily into a DFA: no backtracking, every input byte
-- is read once, so the cost is O(#input) table lookups plus the states
-- built (each O(#program)), and a step budget caps the total. Nothing here
-- recurses on the input; the parser recurses only on group nesting, which
-- is capped.
--
-- Supported subset (bytes, not UTF-8 characters):
--   literals          any byte other than the metacharacters .[]()|*+?{}^$\
--   .                 any byte, newline included
--   [abc] [a-z] [^x]  classes and negated classes; "]" first is literal;
--                     escapes and \d \w \s work inside
--   \d \w \s \D \W \S digits, word bytes [0-9A-Za-z_], white space
--   \n \t \r \f \v    control characters; "\" before any other
--                     punctuation makes it literal (\. \/ \( ...)
--   (a|b) (?:a|b)     groups (nothing is captured) and alternation
--   * + ? {n} {n,} {n,m}  quantifiers (greedy and lazy mean the same here,
--                     a trailing "?" is accepted); counts are at most 100; a
--                     "{" that does not start a valid count is a literal
--   ^ $               start and end of the input
-- A regex always matches the WHOLE input, as if wrapped in ^(?:...)$: write
-- .*foo.* to find foo anywhere. Not supported (an error, not a surprise):
-- backreferences, lookaround, \b, \x.., named classes [[:alpha:]], flags.

local M = {}

-- Instruction opcodes. An instruction is {op, x, y}, always three numbers
-- (or a list of ranges for SET), so the program is a dense list of lists.
local SET, ANY, SPLIT, JMP, BOL, EOL, MATCH = 1, 2, 3, 4, 5, 6, 7

-- Limits that keep hostile regexes cheap to compile and to run.
M.MAX_SOURCE = 512   -- bytes of regex source
M.MAX_DEPTH = 16     -- nested groups (the parser recurses on groups)
M.MAX_COUNT = 100    -- the largest n or m in {n,m}
M.MAX_PROGRAM = 1000 -- instructions after expanding counted repetition (default quota)
M.DEFAULT_BUDGET = 12000 -- work units for one match when no budget is given

local byte, sub = string.byte, string.sub

-- Ranges of the shorthand classes, as flat lists lo1, hi1, lo2, hi2, ...
local DIGIT = { 48, 57 }
local WORD = { 48, 57, 65, 90, 95, 95, 97, 122 }
local SPACE = { 9, 13, 32, 32 } -- \t \n \v \f \r and space

-- complement returns the ranges of 0..255 not covered by sorted ranges r.
local function complement(r)
  local out, lo = {}, 0
  for i = 1, #r, 2 do
    if r[i] > lo then
      out[#out + 1] = lo
      out[#out + 1] = r[i] - 1
    end
    if r[i + 1] + 1 > lo then lo = r[i + 1] + 1 end
  end
  if lo <= 255 then
    out[#out + 1] = lo
    out[#out + 1] = 255
  end
  return out
end

local SHORTHAND = {
  d = DIGIT, w = WORD, s = SPACE,
  D = complement(DIGIT), W = complement(WORD), S = complement(SPACE),
}
local CONTROL = { n = 10, t = 9, r = 13, f = 12, v = 11 }

-- The parser: recursive descent over the source into a small AST
-- ({t = "set" | "any" | "cat" | "alt" | "rep" | "bol" | "eol", ...}).
-- Every function returns the node, or nil and a message.

local Parser = {}
Parser.__index = Parser

function Parser:peek() return sub(self.s, self.i, self.i) end

-- escape reads the byte after "\" at self.i (already past the "\") and
-- returns the ranges it stands for.
function Parser:escape()
  local c = self:peek()
  if c == "" then return nil, "trailing \\" end
  self.i = self.i + 1
  if SHORTHAND[c] then return SHORTHAND[c] end
  if CONTROL[c] then return { CONTROL[c], CONTROL[c] } end
  if c:find("^%w$") then
    return nil, "unsupported escape \\" .. c
  end
  local b = byte(c)
  return { b, b }
end

function Parser:class()
  -- self.i is just past "["
  local neg = false
  if self:peek() == "^" then
    neg = true
    self.i = self.i + 1
  end
  local ranges, first = {}, true
  while true do
    local c = self:peek()
    if c == "" then return nil, "missing ]" end
    if c == "]" and not first then
      self.i = self.i + 1
      break
    end
    first = false
    local lo, hi
    if c == "\\" then
      self.i = self.i + 1
      local r, err = self:escape()
      if not r then return nil, err end
      if #r == 2 and r[1] == r[2] then
        lo = r[1]
      else
        for k = 1, #r do ranges[#ranges + 1] = r[k] end
      end
    else
      lo = byte(c)
      self.i = self.i + 1
    end
    if lo then
      hi = lo
      -- a range a-z, unless the "-" is the last byte before "]"
      if self:peek() == "-" and sub(self.s, self.i + 1, self.i + 1) ~= "]" and sub(self.s, self.i + 1, self.i + 1) ~= "" then
        self.i = self.i + 1
        local h = self:peek()
        if h == "\\" then
          self.i = self.i + 1
          local r, err = self:escape()
          if not r then return nil, err end
          if #r ~= 2 or r[1] ~= r[2] then return nil, "invalid class range" end
          hi = r[1]
        else
          hi = byte(h)
          self.i = self.i + 1
        end
        if hi < lo then return nil, "invalid class range " .. string.char(lo) .. "-" .. string.char(hi) end
      end
      ranges[#ranges + 1] = lo
      ranges[#ranges + 1] = hi
    end
  end
  return { t = "set", r = ranges, neg = neg }
end

-- count reads {n}, {n,} or {n,m} at self.i (on the "{"). It returns min,
-- max (-1: no maximum), or nil when the text is not a count (then "{" is a
-- literal), or false and a message when the count is too large.
function Parser:count()
  local s, i = self.s, self.i
  local n, rest = s:match("^{(%d+)()", i)
  if not n then return nil end
  local lo, hi = tonumber(n), nil
  local j = rest
  local c = sub(s, j, j)
  if c == "}" then
    hi = lo
    j = j + 1
  elseif c == "," then
    j = j + 1
    local m, rest2 = s:match("^(%d*)}()", j)
    if not m then return nil end
    hi = (m == "") and -1 or tonumber(m)
    j = rest2
  else
    return nil
  end
  if lo > M.MAX_COUNT or hi > M.MAX_COUNT then return false, "repetition count over " .. M.MAX_COUNT end
  if hi ~= -1 and hi < lo then return false, "invalid repetition count {" .. lo .. "," .. hi .. "}" end
  self.i = j
  return lo, hi
end

function Parser:atom(depth)
  local c = self:peek()
  self.i = self.i + 1
  if c == "(" then
    if sub(self.s, self.i, self.i + 1) == "?:" then
      self.i = self.i + 2
    elseif self:peek() == "?" then
      return nil, "unsupported group (?" .. sub(self.s, self.i + 1, self.i + 1)
    end
    if depth >= M.MAX_DEPTH then return nil, "groups nested more than " .. M.MAX_DEPTH .. " deep" end
    local node, err = self:alt(depth + 1)
    if not node then return nil, err end
    if self:peek() ~= ")" then return nil, "missing )" end
    self.i = self.i + 1
    return node
  elseif c == "[" then
    return self:class()
  elseif c == "." then
    return { t = "any" }
  elseif c == "^" then
    return { t = "bol" }
  elseif c == "$" then
    return { t = "eol" }
  elseif c == "\\" then
    local r, err = self:escape()
    if not r then return nil, err end
    return { t = "set", r = r, neg = false }
  elseif c == "*" or c == "+" or c == "?" then
    return nil, "missing argument to repetition operator " .. c
  end
  local b = byte(c)
  return { t = "set", r = { b, b }, neg = false }
end

function Parser:cat(depth)
  local items = {}
  while true do
    local c = self:peek()
    if c == "" or c == "|" or c == ")" then break end
    local node, err = self:atom(depth)
    if not node then return nil, err end
    -- at most one quantifier per atom (a** is refused, as in RE2)
    local q = self:peek()
    local lo, hi
    if q == "*" then
      lo, hi = 0, -1
      self.i = self.i + 1
    elseif q == "+" then
      lo, hi = 1, -1
      self.i = self.i + 1
    elseif q == "?" then
      lo, hi = 0, 1
      self.i = self.i + 1
    elseif q == "{" then
      local a, b = self:count()
      if a == false then return nil, b end
      if a then lo, hi = a, b end
    end
    if lo then
      if self:peek() == "?" then self.i = self.i + 1 end -- lazy: same result
      local nq = self:peek()
      if nq == "*" or nq == "+" or nq == "?" or (nq == "{" and self.s:find("^{%d+,?%d*}", self.i)) then
        return nil, "nested repetition operator " .. nq
      end
      node = { t = "rep", node = node, min = lo, max = hi }
    end
    items[#items + 1] = node
  end
  return { t = "cat", list = items }
end

function Parser:alt(depth)
  local first, err = self:cat(depth)
  if not first then return nil, err end
  if self:peek() ~= "|" then return first end
  local list = { first }
  while self:peek() == "|" do
    self.i = self.i + 1
    local node, err2 = self:cat(depth)
    if not node then return nil, err2 end
    list[#list + 1] = node
  end
  return { t = "alt", list = list }
end

-- Code generation: the AST into a flat program. Every instruction is taken
-- from a quota (one per rule, shared by its regexes); emission stops once it
-- is spent, so nested counts such as ((a{100}){100}){100} cannot blow up.

local Gen = {}
Gen.__index = Gen

function Gen:push(op, x, y)
  local n = #self.prog + 1
  local quota = self.quota
  if quota.left <= 0 then
    self.full = true
    return n
  end
  quota.left = quota.left - 1
  self.prog[n] = { op, x, y }
  return n
end

function Gen:emit(node)
  if self.full then return end
  local t = node.t
  if t == "set" then
    local r = node.r
    -- Negated classes are complemented once here, so the VM only tests
    -- ranges. Ranges are sorted first for complement.
    if node.neg then
      local pairs_ = {}
      for k = 1, #r, 2 do pairs_[#pairs_ + 1] = { r[k], r[k + 1] } end
      table.sort(pairs_, function(a, b) return a[1] < b[1] end)
      local sorted = {}
      for _, p in ipairs(pairs_) do
        sorted[#sorted + 1] = p[1]
        sorted[#sorted + 1] = p[2]
      end
      r = complement(sorted)
    end
    if #r == 0 then
      -- matches nothing: a SET with an impossible range
      r = { 1, 0 }
    end
    self:push(SET, r, 0)
  elseif t == "any" then
    self:push(ANY, 0, 0)
  elseif t == "bol" then
    self:push(BOL, 0, 0)
  elseif t == "eol" then
    self:push(EOL, 0, 0)
  elseif t == "cat" then
    for _, n in ipairs(node.list) do
      self:emit(n)
      if self.full then return end
    end
  elseif t == "alt" then
    local jumps = {}
    local last = #node.list
    for k, n in ipairs(node.list) do
      if k < last then
        local split = self:push(SPLIT, 0, 0)
        if self.full then return end
        self.prog[split][2] = split + 1
        self:emit(n)
        local j = self:push(JMP, 0, 0)
        if self.full then return end
        jumps[#jumps + 1] = j
        self.prog[split][3] = #self.prog + 1
      else
        self:emit(n)
      end
      if self.full then return end
    end
    local after = #self.prog + 1
    for _, j in ipairs(jumps) do self.prog[j][2] = after end
  elseif t == "rep" then
    local lo, hi, inner = node.min, node.max, node.node
    if hi == -1 then
      -- n-1 copies, then one copy that loops: x{2,} = x x+
      if lo == 0 then
        local split = self:push(SPLIT, 0, 0)
        if self.full then return end
        self:emit(inner)
        local j = self:push(JMP, split, 0)
        if self.full then return end
        self.prog[split][2] = split + 1
        self.prog[split][3] = j + 1
      else
        for _ = 1, lo - 1 do
          self:emit(inner)
          if self.full then return end
        end
        local start = #self.prog + 1
        self:emit(inner)
        local split = self:push(SPLIT, start, 0)
        if self.full then return end
        self.prog[split][3] = split + 1
      end
    else
      for _ = 1, lo do
        self:emit(inner)
        if self.full then return end
      end
      -- hi-lo optional copies, each able to skip to the end
      local splits = {}
      for _ = 1, hi - lo do
        local split = self:push(SPLIT, 0, 0)
        if self.full then return end
        self.prog[split][2] = split + 1
        splits[#splits + 1] = split
        self:emit(inner)
        if self.full then return end
      end
      local after = #self.prog + 1
      for _, s in ipairs(splits) do self.prog[s][3] = after end
    end
  end
end

-- required returns the longest literal that every match must contain (a
-- run of plain bytes at the top level of the regex), or nil. match checks
-- it first with a plain find, which costs no budget: a large value that
-- cannot match is refused at once instead of running out of budget.
local function required(ast)
  local items
  if ast.t == "cat" then
    items = ast.list
  elseif ast.t == "set" then
    items = { ast }
  else
    return nil
  end
  local best, run = "", {}
  local function close()
    if #run > #best then best = table.concat(run) end
    run = {}
  end
  for _, n in ipairs(items) do
    if n.t == "set" and not n.neg and #n.r == 2 and n.r[1] == n.r[2] then
      run[#run + 1] = string.char(n.r[1])
    elseif n.t ~= "bol" and n.t ~= "eol" then
      close()
    end
  end
  close()
  if best == "" then return nil end
  return best
end

-- compile turns regex source into a program (a list of {op, x, y}) and the
-- literal every match contains (or nil), or returns nil and a message.
-- quota {left = n, max = n} bounds the instructions (default MAX_PROGRAM);
-- pass one to share it between regexes.
function M.compile(src, quota)
  if type(src) ~= "string" then return nil, "a regex is a string" end
  if #src > M.MAX_SOURCE then return nil, "regex longer than " .. M.MAX_SOURCE .. " bytes" end
  local p = setmetatable({ s = src, i = 1 }, Parser)
  local ast, err = p:alt(0)
  if not ast then return nil, err end
  if p.i <= #src then
    -- only an unmatched ")" stops the top-level alternation early
    return nil, "unexpected )"
  end
  quota = quota or { left = M.MAX_PROGRAM, max = M.MAX_PROGRAM }
  local g = setmetatable({ prog = {}, quota = quota }, Gen)
  g:emit(ast)
  if not g.full then g:push(MATCH, 0, 0) end
  if g.full then
    return nil, "regex too large (over " .. tostring(quota.max or M.MAX_PROGRAM) .. " instructions once expanded)"
  end
  return g.prog, required(ast)
end

local function inset(r, c)
  for k = 1, #r, 2 do
    if c >= r[k] and c <= r[k + 1] then return true end
  end
  return false
end

-- Matching runs the program as a lazily built DFA: a DFA state is the set
-- of program counters alive after some input (the NFA simulation of a Pike
-- VM), its transition on a byte is computed the first time that byte is seen
-- in that state and then reused. Most regexes therefore cost one table
-- lookup per input byte; a regex whose DFA would be huge falls back to
-- building states as it goes, which is the plain NFA simulation, and pays
-- for it from the budget.
--
-- A state holds the consuming instructions (SET, ANY), MATCH, and EOL
-- assertions still waiting for the end of the input. BOL holds only at
-- position 0, so only the start state follows it.

local MAX_STATES = 128 -- cached DFA states per program, then its cache restarts
local MAX_PROGRAMS = 32 -- programs with a cached DFA, then all caches restart
local MAX_CACHED = 16384 -- states and transitions cached in all, then all restart

-- The DFA caches, keyed by program table. A parsed rule is memoized, so
-- its program (and DFA) is reused across calls. The caches only save work:
-- results do not depend on them. They are bounded so a pooled state does
-- not grow without end.
local dfas, ndfas, cached = {}, 0, 0

-- closure follows jumps, splits and assertions from seeds and returns the
-- sorted program counters reached, and the work it took. It runs for every
-- new DFA state, so it reuses a stack and marks visits with a stamp on the
-- DFA rather than allocating.
local stack = {}

local function closure(prog, d, seeds, bolOK, eolOK)
  local n = #prog
  local mark = d.mark
  local stamp = d.stamp + 1
  d.stamp = stamp
  local out, nout = {}, 0
  local sp, work = 0, 0
  for k = #seeds, 1, -1 do
    sp = sp + 1
    stack[sp] = seeds[k]
  end
  while sp > 0 do
    local q = stack[sp]
    sp = sp - 1
    if q >= 1 and q <= n and mark[q] ~= stamp then
      mark[q] = stamp
      work = work + 1
      local ins = prog[q]
      local op = ins[1]
      if op == JMP then
        sp = sp + 1
        stack[sp] = ins[2]
      elseif op == SPLIT then
        sp = sp + 1
        stack[sp] = ins[3]
        sp = sp + 1
        stack[sp] = ins[2]
      elseif op == BOL then
        if bolOK then
          sp = sp + 1
          stack[sp] = q + 1
        end
      elseif op == EOL and eolOK then
        sp = sp + 1
        stack[sp] = q + 1
      else
        nout = nout + 1
        out[nout] = q
      end
    end
  end
  table.sort(out)
  -- a visited instruction costs several times a cached transition
  return out, 4 * (work + nout)
end

local function dfaFor(prog)
  if cached >= MAX_CACHED then
    dfas, ndfas, cached = {}, 0, 0
  end
  local d = dfas[prog]
  if d then return d end
  if ndfas >= MAX_PROGRAMS then
    dfas, ndfas, cached = {}, 0, 0
  end
  d = { states = {}, count = 0, mark = {}, stamp = 0 }
  dfas[prog] = d
  ndfas = ndfas + 1
  return d
end

-- intern returns the cached state for a set of program counters.
local function intern(d, pcs)
  local key = table.concat(pcs, ",")
  local st = d.states[key]
  if st then return st end
  if d.count >= MAX_STATES then
    -- too many states: start the cache again (the old states stay usable
    -- for the match in progress, they are just no longer shared)
    d.states, d.count, d.start = {}, 0, nil
  end
  st = { pcs = pcs, next = {}, dead = (#pcs == 0) }
  d.states[key] = st
  d.count = d.count + 1
  cached = cached + 1
  return st
end

-- transition computes where st goes on byte c, and the work it took.
local function transition(prog, d, st, c)
  local seeds = {}
  local pcs = st.pcs
  for k = 1, #pcs do
    local ins = prog[pcs[k]]
    local op = ins[1]
    if op == ANY or (op == SET and type(ins[2]) == "table" and inset(ins[2], c)) then
      seeds[#seeds + 1] = pcs[k] + 1
    end
  end
  local out, work = closure(prog, d, seeds, false, false)
  local nx = intern(d, out)
  if cached < MAX_CACHED then
    st.next[c] = nx
    cached = cached + 1
  end
  return nx, work + #pcs
end

-- accepts reports whether a state matches at the end of the input.
local function accepts(prog, d, st, len)
  local seeds = {}
  for _, q in ipairs(st.pcs) do
    local op = prog[q][1]
    if op == MATCH then return true end
    if op == EOL then seeds[#seeds + 1] = q + 1 end
  end
  if #seeds == 0 then return false end
  local out = closure(prog, d, seeds, len == 0, true)
  for _, q in ipairs(out) do
    if prog[q][1] == MATCH then return true end
  end
  return false
end

-- match reports whether prog matches the whole of s (must, if given, is the
-- literal from compile that s has to contain). budget is an optional
-- table {left = units} shared between calls (one budget per gate
-- decision): an input byte costs one unit, building a DFA state the work it
-- took. When the budget runs out, match returns nil and a message instead
-- of a boolean.
function M.match(prog, s, budget, must)
  budget = budget or { left = M.DEFAULT_BUDGET }
  if type(prog) ~= "table" or type(s) ~= "string" or #prog == 0 then return false end
  if type(must) == "string" and not string.find(s, must, 1, true) then return false end
  local left = budget.left
  local d = dfaFor(prog)
  local st = d.start
  if not st then
    local pcs, work = closure(prog, d, { 1 }, true, false)
    left = left - work
    st = intern(d, pcs)
    d.start = st
  end
  local len = #s
  local i = 1
  while i <= len do
    if st.dead then
      budget.left = left
      return false
    end
    if left <= 0 then
      budget.left = 0
      return nil, "regex step budget exhausted"
    end
    -- bytes are read 64 at a time: one call instead of one per byte
    local j = i + 63
    if j > len then j = len end
    local bytes = { byte(s, i, j) }
    for k = 1, #bytes do
      local c = bytes[k]
      local nx = st.next[c]
      if not nx then
        local work
        nx, work = transition(prog, d, st, c)
        left = left - work
        if left <= 0 then
          budget.left = 0
          return nil, "regex step budget exhausted"
        end
      end
      st = nx
      if st.dead then break end
    end
    left = left - #bytes
    i = j + 1
  end
  budget.left = left > 0 and left or 0
  if st.dead then return false end
  return accepts(prog, d, st, len)
end

return M
