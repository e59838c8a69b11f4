package probe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gosnmp/gosnmp"

	"github.com/seamdc/seam/internal/binding"
	"github.com/seamdc/seam/internal/profile"
)

// snmpDevice holds one gosnmp client, used under mu by one goroutine at
// a time, and recreated after any error (after an agent restart a v3
// client must rediscover the engine's boots and time).
type snmpDevice struct {
	base
	mu     sync.Mutex
	client *gosnmp.GoSNMP // nil: closed
	host   string
	port   uint16
	log    *slog.Logger
}

var wantType = map[profile.DataType][]gosnmp.Asn1BER{
	profile.Integer:     {gosnmp.Integer},
	profile.Gauge32:     {gosnmp.Gauge32, gosnmp.Uinteger32},
	profile.Counter32:   {gosnmp.Counter32},
	profile.Counter64:   {gosnmp.Counter64},
	profile.OctetString: {gosnmp.OctetString},
}

func newSNMP(dev *binding.Device, opts Options) (*snmpDevice, error) {
	host, port, err := net.SplitHostPort(dev.Address)
	if err != nil {
		return nil, fmt.Errorf("device %s: address %q: %w", dev.Name, dev.Address, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("device %s: port %q: %w", dev.Name, port, err)
	}
	d := &snmpDevice{host: host, port: uint16(n), log: opts.Logger.With("device", dev.Name, "address", dev.Address)}
	d.init(dev, opts)
	d.log.Debug(fmt.Sprintf("%d requests for %d points", len(dev.Profile.Batches), len(dev.Profile.Points)), "profile", dev.ProfileName)
	return d, nil
}

// connect builds the client, resolving credentials now. Called with mu held.
func (d *snmpDevice) connect() error {
	if d.client != nil {
		return nil
	}
	lim := d.dev.Profile.Limits
	g := &gosnmp.GoSNMP{Target: d.host, Port: d.port, Transport: "udp", Timeout: d.dev.Timeout, Retries: d.dev.Retries,
		MaxOids: lim.MaxOIDs, MaxRepetitions: uint32(lim.MaxRepetitions)}
	if err := d.credentials(g); err != nil {
		return err
	}
	if err := g.Connect(); err != nil {
		return err
	}
	d.client = g
	return nil
}

var authProtocols = map[string]gosnmp.SnmpV3AuthProtocol{"MD5": gosnmp.MD5, "SHA": gosnmp.SHA, "SHA224": gosnmp.SHA224,
	"SHA256": gosnmp.SHA256, "SHA384": gosnmp.SHA384, "SHA512": gosnmp.SHA512}
var privProtocols = map[string]gosnmp.SnmpV3PrivProtocol{"DES": gosnmp.DES, "AES": gosnmp.AES, "AES192": gosnmp.AES192, "AES256": gosnmp.AES256}

func (d *snmpDevice) credentials(g *gosnmp.GoSNMP) error {
	lookup := d.opts.LookupEnv
	if d.dev.Protocol == binding.SNMPv2c {
		g.Version = gosnmp.Version2c
		c, err := d.dev.Community.Resolve(lookup)
		g.Community = c
		return err
	}
	v3 := d.dev.V3
	auth, err := v3.AuthPass.Resolve(lookup)
	if err != nil {
		return err
	}
	usm := &gosnmp.UsmSecurityParameters{UserName: v3.User, AuthenticationProtocol: authProtocols[v3.AuthProtocol], AuthenticationPassphrase: auth}
	g.Version, g.SecurityModel, g.MsgFlags, g.ContextName = gosnmp.Version3, gosnmp.UserSecurityModel, gosnmp.AuthNoPriv, v3.Context
	if v3.PrivProtocol != "" {
		priv, err := v3.PrivPass.Resolve(lookup)
		if err != nil {
			return err
		}
		usm.PrivacyProtocol, usm.PrivacyPassphrase, g.MsgFlags = privProtocols[v3.PrivProtocol], priv, gosnmp.AuthPriv
	}
	g.SecurityParameters = usm
	return nil
}

func (d *snmpDevice) drop() {
	if d.client != nil {
		d.client.Close()
		d.client = nil
	}
}

// exchange sends one request on the client, reconnecting first if
// needed and dropping the client after an error.
func (d *snmpDevice) exchange(ctx context.Context, send func(*gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error)) (*gosnmp.SnmpPacket, time.Duration, error) {
	if err := d.gap(ctx, &d.mu); err != nil {
		return nil, 0, err
	}
	if err := d.connect(); err != nil {
		return nil, 0, fmt.Errorf("connect: %w", err)
	}
	d.client.Context = ctx
	start := d.opts.Clock.Now()
	d.lastSent = start
	d.requests.Add(1)
	pkt, err := send(d.client)
	latency := d.opts.Clock.Now().Sub(start)
	if err == nil && pkt.Error != gosnmp.NoError {
		err = fmt.Errorf("error status %s at variable %d", pkt.Error, pkt.ErrorIndex)
	}
	if err != nil {
		d.drop()
		return nil, latency, d.describe(err)
	}
	return pkt, latency, nil
}

func (d *snmpDevice) describe(err error) error {
	var ne net.Error
	if errors.Is(err, gosnmp.ErrMaxRetriesExceeded) || (errors.As(err, &ne) && ne.Timeout()) ||
		errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout") {
		return &TimeoutError{After: d.dev.Timeout * time.Duration(d.dev.Retries+1)}
	}
	return err
}

// Read GETs every point of the profile, in the profile's batches.
func (d *snmpDevice) Read(ctx context.Context) ([]Reading, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	raws := d.raws()
	for _, batch := range d.dev.Profile.Batches {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d.get(ctx, batch, raws)
	}
	rs := d.readings(raws)
	return rs, firstErr(rs)
}

func (d *snmpDevice) get(ctx context.Context, batch []*profile.Point, raws []raw) {
	var oids []string
	for i, pt := range batch {
		if i == 0 || batch[i-1].OID != pt.OID {
			oids = append(oids, "."+pt.OID)
		}
	}
	pkt, latency, err := d.exchange(ctx, func(g *gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error) { return g.Get(oids) })
	now := d.opts.Clock.Now()
	if err == nil && len(pkt.Variables) != len(oids) {
		err = fmt.Errorf("garbled reply: %d variables for %d asked", len(pkt.Variables), len(oids))
	}
	if err != nil {
		err = &Error{Device: d.dev, Op: "read", Where: fmt.Sprintf("GET of %d OIDs from %s", len(oids), oids[0][1:]), Err: err}
		for _, pt := range batch {
			raws[d.index[pt.Name]] = raw{err: err, latency: latency, received: now}
		}
		return
	}
	vars := map[string]gosnmp.SnmpPDU{}
	for _, v := range pkt.Variables {
		vars[strings.TrimPrefix(v.Name, ".")] = v
	}
	for _, pt := range batch {
		r := raw{latency: latency, received: now}
		r.value, r.err = d.variable(pt, vars)
		raws[d.index[pt.Name]] = r
	}
}

// variable checks one variable of a reply and returns its raw number.
func (d *snmpDevice) variable(pt *profile.Point, vars map[string]gosnmp.SnmpPDU) (float64, error) {
	fail := func(format string, args ...any) (float64, error) {
		return 0, &Error{Device: d.dev, Op: "read", Point: pt.Name, Where: pt.Where(), Err: fmt.Errorf(format, args...)}
	}
	v, ok := vars[pt.OID]
	switch {
	case !ok:
		return fail("the reply does not name this OID")
	case v.Type == gosnmp.NoSuchObject || v.Type == gosnmp.NoSuchInstance || v.Type == gosnmp.EndOfMibView:
		return fail("the agent answers %s", v.Type)
	}
	match := false
	for _, t := range wantType[pt.Type] {
		match = match || v.Type == t
	}
	if !match {
		return fail("the agent answers a %s, the profile says %s", v.Type, pt.Type)
	}
	f, err := pt.FromSNMP(v.Value)
	if err != nil {
		return fail("%v", err)
	}
	return f, nil
}

// Write SETs a writable point. Anything else is refused before a byte
// is sent.
func (d *snmpDevice) Write(ctx context.Context, point string, value float64) error {
	pt, err := checkWrite(d.dev, point, value)
	if err != nil {
		return err
	}
	fail := func(err error) error {
		return &Error{Device: d.dev, Op: "write", Point: pt.Name, Where: pt.Where(), Err: err}
	}
	if pt.Digits != "" || pt.Dim == profile.Alarm {
		return fail(errors.New("refused: writing a point with decimal digits or an alarm is not supported"))
	}
	raw, err := pt.Raw(value, 0)
	if err != nil {
		return fail(err)
	}
	v, err := pt.ToSNMP(raw)
	if err != nil {
		return fail(err)
	}
	typ := wantType[pt.Type][0]
	d.mu.Lock()
	defer d.mu.Unlock()
	_, _, err = d.exchange(ctx, func(g *gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error) {
		return g.Set([]gosnmp.SnmpPDU{{Name: "." + pt.OID, Type: typ, Value: v}})
	})
	if err != nil {
		return fail(err)
	}
	d.log.Info("wrote", "point", pt.Name, "value", value, "raw", raw)
	return nil
}

// Var is one variable of a walk.
type Var struct {
	OID   string // without leading dot
	Type  gosnmp.Asn1BER
	Value any
}

// Walk reads the subtree under root with GETBULK at the profile's
// max-repetitions. Unlike gosnmp's walks, an error status or an OID that
// does not increase ends the walk with an error naming where it stopped,
// never silently with a partial result.
func (d *snmpDevice) Walk(ctx context.Context, root string) ([]Var, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	root = strings.TrimPrefix(root, ".")
	var out []Var
	cursor := root
	for {
		pkt, _, err := d.exchange(ctx, func(g *gosnmp.GoSNMP) (*gosnmp.SnmpPacket, error) {
			return g.GetBulk([]string{"." + cursor}, 0, uint32(d.dev.Profile.Limits.MaxRepetitions))
		})
		if err != nil {
			return out, &Error{Device: d.dev, Op: "walk", Where: "OID " + root, Err: fmt.Errorf("stopped after %d variables, at %s: %w", len(out), cursor, err)}
		}
		if len(pkt.Variables) == 0 {
			return out, &Error{Device: d.dev, Op: "walk", Where: "OID " + root, Err: fmt.Errorf("stopped after %d variables, at %s: an empty reply", len(out), cursor)}
		}
		for _, v := range pkt.Variables {
			oid := strings.TrimPrefix(v.Name, ".")
			if v.Type == gosnmp.EndOfMibView || !under(oid, root) {
				return out, nil
			}
			if profile.CompareOIDs(oid, cursor) <= 0 {
				return out, &Error{Device: d.dev, Op: "walk", Where: "OID " + root, Err: fmt.Errorf("OID %s does not increase after %s", oid, cursor)}
			}
			out = append(out, Var{OID: oid, Type: v.Type, Value: v.Value})
			cursor = oid
		}
	}
}

func under(oid, root string) bool { return strings.HasPrefix(oid, root+".") }

// Close releases the socket.
func (d *snmpDevice) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drop()
	return nil
}

// Walker is a device that can walk a subtree (SNMP devices).
type Walker interface {
	Walk(ctx context.Context, root string) ([]Var, error)
}
