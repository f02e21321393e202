package toxiproxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/netemu/netemu/proxy"
)

// The handlers, in toxiproxy's order of checks: the proxy, then the
// body, then the fields (toxiproxy's api.go is the reference for which
// error wins). Each runs under Server.mu, released with Server.unlock,
// after which what may wait on a network runs; names are resolved before
// the lock is taken.

var errClosed = errors.New("the server is closed")

// lock takes Server.mu, or fails once the server is closed.
func (s *Server) lock() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return errClosed
	}
	return nil
}

// lockProxy takes Server.mu and returns the proxy named in the request's
// path; on an error the lock is not held. Release it with Server.unlock.
func (s *Server) lockProxy(r *http.Request) (*proxyState, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	px, err := s.lookup(r)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	return px, nil
}

// lookup is the proxy named in the request's path.
func (s *Server) lookup(r *http.Request) (*proxyState, error) {
	px := s.proxies[r.PathValue("proxy")]
	if px == nil {
		return nil, errProxyNotFound
	}
	return px, nil
}

// proxyInput is a proxy as clients send it; Enabled is nil when absent.
type proxyInput struct {
	Name     string `json:"name"`
	Listen   string `json:"listen"`
	Upstream string `json:"upstream"`
	Enabled  *bool  `json:"enabled"`
}

// Lengths a name or an address may have. toxiproxy sets none; a proxy's
// name and addresses go into every line its connections log, so a
// megabyte of them would be written again per connection. A host name
// is at most 253 bytes (RFC 1035 section 2.3.4), with a port 261.
const (
	maxName = 255
	maxAddr = 261
)

// tooLong refuses value, given as field, if it is longer than max
// bytes; at, if not empty, says which proxy of a list it is in.
func tooLong(field, value string, max int, at string) error {
	if len(value) <= max {
		return nil
	}
	return &apiError{fmt.Sprintf("%s is %d bytes%s: at most %d", field, len(value), at, max), http.StatusBadRequest}
}

// check refuses in's name and addresses if they are too long.
func (in proxyInput) check(at string) error {
	for _, err := range []error{tooLong("name", in.Name, maxName, at), tooLong("listen", in.Listen, maxAddr, at), tooLong("upstream", in.Upstream, maxAddr, at)} {
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) proxyIndex(w http.ResponseWriter, r *http.Request) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.unlock()
	out := map[string]proxyJSON{}
	for name, px := range s.proxies {
		out[name] = px.json()
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) proxyCreate(w http.ResponseWriter, r *http.Request) error {
	var in proxyInput
	if err := decode(r, &in); err != nil {
		return err
	}
	if err := in.check(""); err != nil {
		return err
	}
	var res resolved
	if in.Name != "" && in.Upstream != "" {
		res = resolveProxy(in.Listen, in.Upstream)
	}
	if err := s.lock(); err != nil {
		return err
	}
	defer s.unlock()
	switch {
	case in.Name == "":
		return apiErr(errMissingField, errors.New("name"))
	case in.Upstream == "":
		return apiErr(errMissingField, errors.New("upstream"))
	case s.proxies[in.Name] != nil:
		return errProxyExists
	}
	px := s.newProxy(in, res)
	if px.enabled {
		if err := px.start(); err != nil {
			return err
		}
	}
	s.proxies[px.name] = px
	return writeJSON(w, http.StatusCreated, px.json())
}

func (s *Server) populate(w http.ResponseWriter, r *http.Request) error {
	var in []proxyInput
	if err := decode(r, &in); err != nil {
		return s.populated(w, r, nil, err)
	}
	done, err := s.populateAll(in)
	return s.populated(w, r, done, err)
}

// Populate makes the proxies of a JSON array as POST /populate takes it
// (toxiproxy-server's -config file): each new one made, one that differs
// from the proxy of its name replaces it, one that does not is kept.
func (s *Server) Populate(r io.Reader) error {
	var in []proxyInput
	if err := json.NewDecoder(r).Decode(&in); err != nil {
		return apiErr(errBadBody, err)
	}
	_, err := s.populateAll(in)
	return err
}

// populateAll checks every proxy of in, then makes them in order; it
// stops at the first that fails, keeping those made.
func (s *Server) populateAll(in []proxyInput) ([]proxyJSON, error) {
	res := make([]resolved, len(in))
	for i, p := range in {
		if err := p.check(fmt.Sprintf(" at proxy %d", i+1)); err != nil {
			return nil, err
		}
	}
	for i, p := range in {
		if p.Name != "" && p.Upstream != "" {
			res[i] = resolveProxy(p.Listen, p.Upstream)
		}
	}
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.unlock()
	for i, p := range in {
		switch {
		case p.Name == "":
			return nil, apiErr(errMissingField, fmt.Errorf("name at proxy %d", i+1))
		case p.Upstream == "":
			return nil, apiErr(errMissingField, fmt.Errorf("upstream at proxy %d", i+1))
		}
	}
	var done []proxyJSON
	for i, p := range in {
		if old := s.proxies[p.Name]; old != nil {
			differs, err := old.differs(res[i], p.Upstream)
			if err != nil {
				return done, err
			}
			if !differs {
				done = append(done, old.json())
				continue
			}
			old.stop()
			delete(s.proxies, p.Name)
		}
		px := s.newProxy(p, res[i])
		if px.enabled {
			if err := px.start(); err != nil {
				return done, err
			}
		}
		s.proxies[px.name] = px
		done = append(done, px.json())
	}
	return done, nil
}

// populated answers /populate, which always answers JSON: the proxies
// made, and the error if one stopped it.
func (s *Server) populated(w http.ResponseWriter, r *http.Request, done []proxyJSON, err error) error {
	if err == nil {
		return writeJSON(w, http.StatusCreated, struct {
			Proxies []proxyJSON `json:"proxies"`
		}{done})
	}
	ae := clipped(asAPIError(err))
	s.cfg.Logf("%s %s: %d %s", r.Method, proxy.Clip(r.URL.Path), ae.Status, ae.Message)
	return writeJSON(w, ae.Status, struct {
		Error   string      `json:"error"`
		Status  int         `json:"status"`
		Proxies []proxyJSON `json:"proxies"`
	}{ae.Message, ae.Status, done})
}

func (s *Server) proxyShow(w http.ResponseWriter, r *http.Request) error {
	px, err := s.lockProxy(r)
	if err != nil {
		return err
	}
	defer s.unlock()
	return writeJSON(w, http.StatusOK, px.json())
}

func (s *Server) proxyUpdate(w http.ResponseWriter, r *http.Request) error {
	// The body is read over the proxy's settings; the addresses it names
	// are resolved without the lock, then the proxy is looked up again.
	px, err := s.lockProxy(r)
	if err != nil {
		return err
	}
	enabled := px.enabled
	in := proxyInput{Listen: px.listen, Upstream: px.upstream, Enabled: &enabled}
	err = decode(r, &in)
	s.unlock()
	if err != nil {
		return err
	}
	if in.Enabled == nil { // "enabled": null
		in.Enabled = &enabled
	}
	if err := in.check(""); err != nil {
		return err
	}
	res := resolveProxy(in.Listen, in.Upstream)
	if px, err = s.lockProxy(r); err != nil {
		return err
	}
	defer s.unlock()
	differs, err := px.differs(res, in.Upstream)
	if err != nil {
		return err
	}
	if differs {
		// A loop is refused before anything changes; a port 0 shows its
		// loop, if any, once bound (start).
		if *in.Enabled {
			listens := res.listens
			if res.port0 {
				listens = nil
			}
			if err := s.checkLoop(px, in.Upstream, res.upstreams, listens); err != nil {
				return err
			}
		}
		px.stop()
		px.listen, px.upstream = in.Listen, in.Upstream
		px.upstreamAddrs = res.upstreams
	}
	if *in.Enabled != px.enabled {
		if *in.Enabled {
			if err := px.start(); err != nil {
				return err
			}
		} else {
			px.stop()
		}
	}
	return writeJSON(w, http.StatusOK, px.json())
}

func (s *Server) proxyDelete(w http.ResponseWriter, r *http.Request) error {
	px, err := s.lockProxy(r)
	if err != nil {
		return err
	}
	defer s.unlock()
	px.stop()
	delete(s.proxies, px.name)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// reset enables every proxy and removes every toxic; a proxy that cannot
// listen stops it there, as in toxiproxy.
func (s *Server) reset(w http.ResponseWriter, r *http.Request) error {
	if err := s.lock(); err != nil {
		return err
	}
	defer s.unlock()
	for _, px := range s.proxies {
		if !px.enabled {
			if err := px.start(); err != nil {
				return err
			}
		}
		px.setToxics(nil, nil)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) toxicIndex(w http.ResponseWriter, r *http.Request) error {
	px, err := s.lockProxy(r)
	if err != nil {
		return err
	}
	defer s.unlock()
	return writeJSON(w, http.StatusOK, px.ordered())
}

func (s *Server) toxicCreate(w http.ResponseWriter, r *http.Request) error {
	px, err := s.lockProxy(r)
	if err != nil {
		return err
	}
	defer s.unlock()
	in := struct {
		Name       string          `json:"name"`
		Type       string          `json:"type"`
		Stream     string          `json:"stream"`
		Toxicity   float32         `json:"toxicity"`
		Attributes json.RawMessage `json:"attributes"`
	}{Stream: "downstream", Toxicity: 1}
	if err := decode(r, &in); err != nil {
		return err
	}
	dir, ok := parseStream(in.Stream)
	if !ok {
		return errInvalidStream
	}
	if err := tooLong("name", in.Name, maxName, ""); err != nil {
		return err
	}
	if in.Name == "" {
		in.Name = in.Type + "_" + in.Stream
	}
	k := kinds[in.Type]
	if k == nil {
		return errInvalidType
	}
	if px.toxic(in.Name) != nil {
		return errToxicExists
	}
	attrs, err := decodeAttrs(k, nil, in.Attributes)
	if err != nil {
		return err
	}
	t := &toxic{name: in.Name, kind: k, stream: in.Stream, dir: dir, toxicity: in.Toxicity, attrs: attrs,
		id: s.nextToxic.Add(1), version: s.nextToxic.Add(1)}
	// The toxics before, all applied, with t: one step, not one per toxic.
	set := px.toxics.Load()
	all, err := set.all, set.allErr
	if err == nil && t.kind.onLink {
		err = all.apply(t)
	}
	if err == nil {
		_, err = all.config()
	}
	if err != nil {
		return &apiError{"invalid toxics: " + err.Error(), http.StatusBadRequest}
	}
	px.setToxics(append(px.list(), t), t)
	return writeJSON(w, http.StatusOK, t)
}

// checkLink refuses toxics whose link, all of them applied, is not one
// (a delay beyond link.MaxDelay, a netem and a qdisc that clash).
func (s *Server) checkLink(list []*toxic) error {
	if _, err := linkConfig(s.cfg.Link, list, func(*toxic) bool { return true }); err != nil {
		return &apiError{"invalid toxics: " + err.Error(), http.StatusBadRequest}
	}
	return nil
}

func (s *Server) toxicShow(w http.ResponseWriter, r *http.Request) error {
	px, err := s.lockProxy(r)
	if err != nil {
		return err
	}
	defer s.unlock()
	t := px.toxic(r.PathValue("toxic"))
	if t == nil {
		return errToxicNotFound
	}
	return writeJSON(w, http.StatusOK, t)
}

func (s *Server) toxicUpdate(w http.ResponseWriter, r *http.Request) error {
	px, err := s.lockProxy(r)
	if err != nil {
		return err
	}
	defer s.unlock()
	old := px.toxic(r.PathValue("toxic"))
	if old == nil {
		return errToxicNotFound
	}
	var in struct {
		Toxicity   *float32        `json:"toxicity"`
		Attributes json.RawMessage `json:"attributes"`
	}
	if err := decode(r, &in); err != nil {
		return err
	}
	attrs, err := decodeAttrs(old.kind, old.attrs, in.Attributes)
	if err != nil {
		return err
	}
	t := *old
	t.attrs, t.version = attrs, s.nextToxic.Add(1)
	if in.Toxicity != nil {
		t.toxicity = *in.Toxicity
	}
	list := px.list()
	for i := range list {
		if list[i] == old {
			list[i] = &t
		}
	}
	if err := s.checkLink(list); err != nil {
		return err
	}
	px.setToxics(list, nil)
	return writeJSON(w, http.StatusOK, &t)
}

func (s *Server) toxicDelete(w http.ResponseWriter, r *http.Request) error {
	px, err := s.lockProxy(r)
	if err != nil {
		return err
	}
	defer s.unlock()
	old := px.toxic(r.PathValue("toxic"))
	if old == nil {
		return errToxicNotFound
	}
	var list []*toxic
	for _, t := range px.list() {
		if t != old {
			list = append(list, t)
		}
	}
	px.setToxics(list, nil)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// version answers as toxiproxy 2.7 and later do.
func (s *Server) version(w http.ResponseWriter, r *http.Request) error {
	b, err := json.Marshal(s.cfg.Version)
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json;charset=utf-8")
	fmt.Fprintf(w, "{\"version\": %s}\n", b)
	return nil
}

// proxyJSON is a proxy on the wire, in toxiproxy's key order. Logger is
// toxiproxy's, an empty object in every answer since 2.5.
type proxyJSON struct {
	Name     string   `json:"name"`
	Listen   string   `json:"listen"`
	Upstream string   `json:"upstream"`
	Enabled  bool     `json:"enabled"`
	Logger   struct{} `json:"Logger"`
	Toxics   []*toxic `json:"toxics"`
}

func (px *proxyState) json() proxyJSON {
	return proxyJSON{Name: px.name, Listen: px.listen, Upstream: px.upstream, Enabled: px.enabled, Toxics: px.ordered()}
}

// ordered lists the toxics as toxiproxy does: upstream's, then
// downstream's, each in the order added; never nil.
func (px *proxyState) ordered() []*toxic {
	out := []*toxic{}
	for _, dir := range []proxy.Direction{proxy.Up, proxy.Down} {
		for _, t := range px.list() {
			if t.dir == dir {
				out = append(out, t)
			}
		}
	}
	return out
}

// differs says whether listen (res, resolved) and upstream differ from
// px's, as toxiproxy compares them: the listen address resolved (a port
// 0 always differs), the upstream as written.
func (px *proxyState) differs(res resolved, upstream string) (bool, error) {
	if res.listenErr != nil {
		return false, res.listenErr
	}
	return res.listen != px.listen || res.port0 || upstream != px.upstream, nil
}
