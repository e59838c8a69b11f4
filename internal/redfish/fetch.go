package redfish

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// MaxResources bounds what Fetch reads of a service.
const MaxResources = 1 << 20

// FetchParallel is how many requests Fetch has in flight at once: a
// client's connections to the service need be no more.
const FetchParallel = 8

// Fetch reads a Redfish service into a tree: GET /redfish/v1/, then
// every resource a link (@odata.id) leads to on the same service,
// FetchParallel at a time, through client (nil: http.DefaultClient,
// which never gives up; commands pass one with a timeout, from
// internal/redfish/bmchttp). A URL's user and password, if any, are sent
// as basic authentication. A resource whose GET fails is left out, with
// its status: Import reports the links to it; a request that ran past
// the client's timeout "timed out after" it. Fetch fails only when the
// service root cannot be read.
func Fetch(ctx context.Context, service string, client *http.Client) (*Tree, error) {
	u, err := url.Parse(service)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%s: not an http(s) URL of a Redfish service", service)
	}
	if client == nil {
		client = http.DefaultClient
	}
	f := &fetcher{ctx: ctx, client: client, user: u.User, t: NewTree(), seen: map[string]bool{}}
	u.User, u.Path, u.RawQuery, u.Fragment = nil, "", "", ""
	f.base = u.String()
	f.t.origin = f.base
	root, err := f.get(Root + "/")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.base+Root+"/", err)
	}
	f.crawl(f.links(root))
	return f.t, ctx.Err()
}

type fetcher struct {
	ctx    context.Context
	client *http.Client
	user   *url.Userinfo
	base   string
	mu     sync.Mutex
	t      *Tree
	seen   map[string]bool
}

// crawl reads, breadth first, every URI the tree's documents link to.
func (f *fetcher) crawl(queue []string) {
	for len(queue) > 0 && f.ctx.Err() == nil {
		var next []string
		var wg sync.WaitGroup
		work := make(chan string)
		for range FetchParallel {
			wg.Go(func() {
				for uri := range work {
					if doc, err := f.get(uri); err == nil {
						found := f.links(doc)
						f.mu.Lock()
						next = append(next, found...)
						f.mu.Unlock()
					}
				}
			})
		}
		for _, uri := range queue {
			work <- uri
		}
		close(work)
		wg.Wait()
		queue = next
	}
}

// links are the URIs a document links to that are not read yet (marked
// as read from now on).
func (f *fetcher) links(doc []byte) []string {
	v, _, _, err := decode(doc)
	if err != nil {
		return nil // Import reports it
	}
	var out []string
	f.mu.Lock()
	defer f.mu.Unlock()
	visitRefs(v, "", func(_ string, ref any) {
		s, ok := ref.(string)
		if !ok {
			return
		}
		s = strings.TrimPrefix(s, f.base)
		if !strings.HasPrefix(s, Root) {
			return
		}
		c := Clean(s)
		if !f.seen[c] && len(f.seen) < MaxResources {
			f.seen[c] = true
			out = append(out, c)
		}
	})
	return out
}

// get reads one resource into the tree.
func (f *fetcher) get(uri string) ([]byte, error) {
	f.mu.Lock()
	f.seen[Clean(uri)] = true
	f.mu.Unlock()
	req, err := http.NewRequestWithContext(f.ctx, http.MethodGet, f.base+uri, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("OData-Version", "4.0")
	if f.user != nil {
		pw, _ := f.user.Password()
		req.SetBasicAuth(f.user.Username(), pw)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		err = f.timedOut(err)
		f.gone(uri, err.Error())
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		err = f.timedOut(err)
		f.gone(uri, err.Error())
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		f.gone(uri, resp.Status)
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}
	f.mu.Lock()
	f.t.Put(uri, body, f.base+uri)
	f.mu.Unlock()
	return body, nil
}

// timedOut says "timed out after X" for a request that ran past the
// client's timeout (not one whose context ended); other errors stay as
// they are.
func (f *fetcher) timedOut(err error) error {
	var te interface{ Timeout() bool }
	if f.client.Timeout > 0 && f.ctx.Err() == nil && errors.As(err, &te) && te.Timeout() {
		return &timeoutError{after: f.client.Timeout, err: err}
	}
	return err
}

type timeoutError struct {
	after time.Duration
	err   error
}

func (e *timeoutError) Error() string { return fmt.Sprintf("timed out after %s", e.after) }
func (e *timeoutError) Unwrap() error { return e.err }

func (f *fetcher) gone(uri, why string) {
	f.mu.Lock()
	f.t.gone[Clean(uri)] = why
	f.mu.Unlock()
}

// Load reads a tree from a directory (ReadDir) or an http(s) URL
// (Fetch, through client).
func Load(ctx context.Context, src string, client *http.Client) (*Tree, error) {
	if strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://") {
		return Fetch(ctx, src, client)
	}
	return ReadDir(src)
}
