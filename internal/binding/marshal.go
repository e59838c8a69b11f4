package binding

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Marshal writes b as a binding file of the given CUE package: what a
// simulator prints for the endpoints it listens on. Paths are written as
// they are in b (ProfileDirs and Contracts: absolute after Load; set
// them relative to where the file goes if you like). Load reads the
// output back to an equal binding.
func Marshal(b *Binding, pkg string) []byte {
	var w bytes.Buffer
	fmt.Fprintf(&w, "package %s\n\n", pkg)
	w.WriteString("profiles: [")
	for i, d := range b.ProfileDirs {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(strconv.Quote(d))
	}
	w.WriteString("]\n")
	if b.Contracts != "" {
		fmt.Fprintf(&w, "contracts: %s\n", strconv.Quote(b.Contracts))
	}
	w.WriteString("\ndevices: {\n")
	for _, d := range b.Devices {
		fmt.Fprintf(&w, "\t%s: {%s}\n", strconv.Quote(d.Name), deviceFields(d))
	}
	w.WriteString("}\n")
	if len(b.Channels) > 0 {
		w.WriteString("\nchannels: {\n")
		for _, c := range b.Channels {
			opt := ""
			if c.Optional {
				opt = ", optional: true"
			}
			fmt.Fprintf(&w, "\t%s: {device: %s, point: %s%s}\n", strconv.Quote(c.Name), strconv.Quote(c.DeviceName), strconv.Quote(c.PointName), opt)
		}
		w.WriteString("}\n")
	}
	if sm := b.Simulator; sm != nil {
		stepped := ""
		if sm.Stepped {
			stepped = ", stepped: true"
		}
		fmt.Fprintf(&w, "\nsimulator: {control: %s, time_scale: %s%s}\n", strconv.Quote(sm.Control), strconv.FormatFloat(sm.TimeScale, 'g', -1, 64), stepped)
	}
	if len(b.Ambient) > 0 {
		names := make([]string, len(b.Ambient))
		for i, a := range b.Ambient {
			names[i] = strconv.Quote(a)
		}
		fmt.Fprintf(&w, "\nambient: [%s]\n", strings.Join(names, ", "))
	}
	if len(b.LoadBanks) > 0 {
		w.WriteString("\nloadbanks: {\n")
		for _, lb := range b.LoadBanks {
			fmt.Fprintf(&w, "\t%s: {device: %s%s}\n", strconv.Quote(lb.Name), strconv.Quote(lb.DeviceName), rolePoints(lb))
		}
		w.WriteString("}\n")
	}
	return w.Bytes()
}

func deviceFields(d *Device) string {
	var w bytes.Buffer
	field := func(name, value string) {
		if w.Len() > 0 {
			w.WriteString(", ")
		}
		fmt.Fprintf(&w, "%s: %s", name, value)
	}
	q := strconv.Quote
	field("protocol", q(string(d.Protocol)))
	field("address", q(d.Address))
	field("profile", q(d.ProfileName))
	if d.Timeout > 0 && d.Timeout != time.Second {
		field("timeout", q(duration(d.Timeout)))
	}
	if d.Retries > 0 {
		field("retries", strconv.Itoa(d.Retries))
	}
	switch d.Protocol {
	case ModbusTCP:
		field("unit", strconv.Itoa(int(d.Unit)))
	case ModbusRTU:
		field("unit", strconv.Itoa(int(d.Unit)))
		field("serial", fmt.Sprintf("{baud: %d, data_bits: %d, parity: %s, stop_bits: %d}", d.Serial.Baud, d.Serial.DataBits, q(d.Serial.Parity), d.Serial.StopBits))
	case SNMPv2c:
		field("community", q(d.Community.Ref))
	case SNMPv3:
		field("user", q(d.V3.User))
		field("auth", fmt.Sprintf("{protocol: %s, passphrase: %s}", q(d.V3.AuthProtocol), q(d.V3.AuthPass.Ref)))
		if d.V3.PrivProtocol != "" {
			field("priv", fmt.Sprintf("{protocol: %s, passphrase: %s}", q(d.V3.PrivProtocol), q(d.V3.PrivPass.Ref)))
		}
		if d.V3.Context != "" {
			field("context", q(d.V3.Context))
		}
	}
	if i := d.Instrument; i != nil {
		field("instrument", instrumentText(i))
	}
	return w.String()
}

func instrumentText(i *Instrument) string {
	var parts []string
	for _, f := range []struct{ name, v string }{{"make", i.Make}, {"model", i.Model}, {"serial", i.Serial},
		{"calibrated", i.Calibrated}, {"due", i.Due}, {"certificate", i.Certificate}} {
		if f.v != "" {
			parts = append(parts, f.name+": "+strconv.Quote(f.v))
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// duration writes a timeout in ms or s.
func duration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + " s"
	}
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', -1, 64) + " ms"
}

func rolePoints(lb *LoadBank) string {
	var w bytes.Buffer
	for _, role := range Roles {
		if p := lb.Roles[role]; p != "" && p != role {
			if w.Len() > 0 {
				w.WriteString(", ")
			}
			fmt.Fprintf(&w, "%s: %s", strconv.Quote(role), strconv.Quote(p))
		}
	}
	if w.Len() == 0 {
		return ""
	}
	return ", points: {" + w.String() + "}"
}
