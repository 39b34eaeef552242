package server

import (
	"net"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// CheckListen refuses an address other hosts can reach when there is no
// token: the sidecar runs plugins' decisions on behalf of whoever calls it,
// so off loopback every caller must prove who it is. tokenEnv names the
// variable for the message.
func CheckListen(addr, token, tokenEnv string) error {
	if token != "" || Loopback(addr) {
		return nil
	}
	how := "set [server] token_env to a variable name and export a token in it"
	if tokenEnv != "" {
		how = "export a token in $" + tokenEnv + " ([server] token_env)"
	}
	return errs.New(errs.ConfigInvalid, "refusing to listen on %s without a token: %s, or listen on 127.0.0.1", addr, how)
}

// Loopback reports whether addr (host:port) listens only on the loopback
// interface. An empty host or 0.0.0.0 listens everywhere; a name other than
// localhost may resolve anywhere, so it counts as reachable.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
