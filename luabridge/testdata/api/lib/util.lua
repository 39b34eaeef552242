local M = {}
function M.shout(s) return s:upper() .. "!" end
return M
