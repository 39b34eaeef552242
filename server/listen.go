package server

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// CheckListen refuses an address other hosts can reach when there is no
// token: the sidecar runs plugins' decisions on behalf of whoever calls it,
// so off loopback every caller must prove who it is. tokenEnv names the
// variable for the message.
func CheckListen(addr, token, tokenEnv string) error {
	// The port is a number, as [server] addr's is: net.Listen would look a
	// name up (and fail as a run-time error, exit 1, not a usage one).
	_, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 0 || n > 65535 {
		return errs.New(errs.ConfigInvalid, "%q is not HOST:PORT with a port from 0 to 65535; listen on an address such as 127.0.0.1:7878 (or 127.0.0.1:0 for any free port)", addr)
	}
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

// Codes of requests a browser page may have sent (README.md, Security).
const (
	codeHostNotAllowed   errs.Code = "host_not_allowed"
	codeOriginNotAllowed errs.Code = "origin_not_allowed"
)

// hostRule decides which Host and Origin headers a request may carry.
//
// Host: a page on an attacker's domain can make a browser send requests to
// the loopback sidecar by pointing its name at 127.0.0.1 (DNS rebinding);
// the browser then names the attacker's domain in Host. So Host must be
// localhost, a loopback address or the listen address's host. A server
// that listens on every address (0.0.0.0, ::, which CheckListen allows only
// with a token) has no one name to check; there any Host is accepted and
// the token, which a page cannot send, protects it.
//
// Origin: browsers name the page's origin on cross-site requests. The
// sidecar serves no pages, so a request that carries an Origin other than
// its own (scheme://Host) comes from a page on another site (CSRF), and is
// refused.
type hostRule struct {
	listen string // the listen address's host, lower case
	any    bool   // listening on every address
}

func newHostRule(addr string) hostRule {
	if addr == "" {
		return hostRule{}
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if host == "" {
		return hostRule{any: true}
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return hostRule{any: true}
	}
	return hostRule{listen: host}
}

func (h hostRule) check(r *http.Request) error {
	if !h.any {
		name := hostName(r.Host)
		ip := net.ParseIP(name)
		if name != "" && name != "localhost" && name != h.listen && (ip == nil || !ip.IsLoopback()) {
			return fail(http.StatusForbidden, codeHostNotAllowed,
				"Host %q is not this sidecar's address; call it as localhost, a loopback address or its listen address", r.Host)
		}
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !strings.EqualFold(u.Host, r.Host) {
			return fail(http.StatusForbidden, codeOriginNotAllowed,
				"a request from the web page at %q is refused: the sidecar is not for browsers", o)
		}
	}
	// A browser sends no Origin with a GET from an image or a link on
	// another site, but it says where the request comes from; only an
	// address typed in (none) or the sidecar's own pages may call it.
	if site := r.Header.Get("Sec-Fetch-Site"); site == "cross-site" || site == "same-site" {
		return fail(http.StatusForbidden, codeOriginNotAllowed,
			"a request from another site's web page is refused (Sec-Fetch-Site: %s): the sidecar is not for browsers", site)
	}
	return nil
}

// hostName is a Host header's name without its port or brackets, lower
// case ("[::1]:7878" is "::1"). It allocates only for upper-case names
// (net.SplitHostPort allocates an error for a Host without a port).
func hostName(hostport string) string {
	host := hostport
	if strings.HasPrefix(host, "[") {
		if end := strings.IndexByte(host, ']'); end > 0 {
			host = host[1:end]
		}
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host, ':') == i {
		host = host[:i]
	}
	return strings.ToLower(host)
}
