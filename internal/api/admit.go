package api

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// admit refuses a request that a web page of another site could have
// made the browser send: a Host that is not a loopback name on a loopback
// listener (DNS rebinding), an Origin that is not the service's own nor
// one of Config.Origins (the literal "null" included), and, for a method
// that changes state, a body that is not JSON (a form or text/plain needs
// no preflight; application/json does). A request with no Content-Type
// and no Origin is no browser's: it is served, as scripts send it.
func (h *Handler) admit(r *http.Request) *apiError {
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && isLoopback(local.String()) && !isLoopback(r.Host) {
		return &apiError{status: http.StatusForbidden, message: "Host " + quote(r.Host) + " is not a loopback name: this executor listens on loopback only (use localhost or 127.0.0.1)"}
	}
	origin, hasOrigin := r.Header["Origin"]
	if hasOrigin && !h.originAllowed(r, origin[0]) {
		return &apiError{status: http.StatusForbidden, message: "Origin " + quote(origin[0]) + " may not use this API: cross-site requests are refused (RUNBLOCK_API_ORIGINS lists the origins allowed)"}
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodDelete {
		return nil
	}
	ct := r.Header.Get("Content-Type")
	if ct == "" && !hasOrigin {
		return nil
	}
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return &apiError{status: http.StatusUnsupportedMediaType, message: "Content-Type " + quote(ct) + " is not accepted: send the body as JSON with Content-Type: application/json"}
	}
	return nil
}

// originAllowed: origin is the service's own (its host is the request's
// Host) or one that Config.Origins lists.
func (h *Handler) originAllowed(r *http.Request, origin string) bool {
	for _, o := range h.cfg.Origins {
		if strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return strings.EqualFold(u.Host, r.Host)
}

// isLoopback: the host of addr (a host:port or a host) is localhost or a
// loopback IP.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// quote quotes what a client sent, cut short, for an error message.
func quote(s string) string {
	if len(s) > 100 {
		s = s[:100]
	}
	return strconv.Quote(s)
}
