package bmc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/seamdc/seam/internal/inventory"
	"github.com/seamdc/seam/internal/redfish"
)

// dropKinds are the elements of a BMC's graph that give its tray its
// place (the rack it sits in, a CDU's loop) but are not the BMC's to
// serve.
var dropKinds = map[string]bool{"rack": true, "site": true, "module": true, "loop": true}

// static is a BMC's tree, built from its graph: documents by URI
// (decoded, for the live overlays) and the URIs of what the overlays
// attach to.
type static struct {
	docs    map[string]map[string]any
	encoded map[string][]byte
	chassis string         // the tray's chassis ("" for a CDU)
	system  string         // its ComputerSystem ("" for a tray without one)
	cdu     string         // a CDU's CoolingUnit
	psus    map[string]int // PowerSupply URIs → bay
	kind    string

	manager  string              // the BMC's Manager ("" where the export gives none)
	firmware map[string]fwMember // FirmwareInventory members by URI
}

// build exports a BMC's graph with internal/redfish's Export and keeps
// what the BMC serves: every resource but those of the rack, site,
// module or loop around its equipment, with links to resources it does
// not serve dropped and seam's Oem extension removed (a BMC speaks
// plain Redfish); names are what a BMC calls its parts.
func build(g *inventory.Graph, name string) (*static, error) {
	t := redfish.Export(g)
	s := &static{docs: map[string]map[string]any{}, encoded: map[string][]byte{}, psus: map[string]int{}}
	kinds := map[string]string{}
	for _, uri := range t.URIs() {
		raw, _ := t.Get(uri)
		doc, err := decodeDoc(raw)
		if err != nil {
			return nil, fmt.Errorf("BMC %s: %s: %w", name, uri, err)
		}
		kind := seamKind(doc)
		if dropKinds[kind] {
			continue
		}
		kinds[uri] = kind
		s.docs[uri] = doc
	}
	for uri, doc := range s.docs {
		prune(doc, s.docs)
		stripOem(doc)
		kind := kinds[uri]
		switch {
		case kind == "compute" || kind == "scale-up-switch" || kind == "power-shelf":
			if strings.HasPrefix(uri, redfish.Root+"/Chassis/") && strings.Count(uri, "/") == 4 {
				s.chassis, s.kind = uri, kind
			}
		case kind == "cdu":
			s.cdu, s.kind = uri, kind
		}
		if doc["@odata.type"] == "#ComputerSystem.v1_27_0.ComputerSystem" {
			s.system = uri
		}
		if kind == "psu" {
			if loc, ok := doc["Location"].(map[string]any); ok {
				if pl, ok := loc["PartLocation"].(map[string]any); ok {
					if n, ok := pl["LocationOrdinalValue"].(json.Number); ok {
						bay, _ := n.Int64()
						s.psus[uri] = int(bay)
					}
				}
			}
		}
		if kind != "" {
			doc["Name"] = friendlyName(kind, doc)
		}
		if members, ok := doc["Members"].([]any); ok {
			doc["Members@odata.count"] = len(members)
		}
	}
	s.root(name)
	s.overlays()
	s.updateOverlays()
	for uri, doc := range s.docs {
		b, err := encode(doc)
		if err != nil {
			return nil, err
		}
		s.encoded[uri] = b
	}
	return s, nil
}

func decodeDoc(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func encode(v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func seamKind(doc map[string]any) string {
	if oem, ok := doc["Oem"].(map[string]any); ok {
		if s, ok := oem["Seam"].(map[string]any); ok {
			k, _ := s["Kind"].(string)
			return k
		}
	}
	return ""
}

// prune drops every link to a resource the BMC does not serve: a link
// property goes, a list keeps the links that lead somewhere.
func prune(v any, keep map[string]map[string]any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if strings.HasPrefix(k, "@") {
				continue
			}
			if ref, ok := refOf(e); ok {
				if keep[redfish.Clean(ref)] == nil {
					delete(x, k)
				}
				continue
			}
			if list, ok := e.([]any); ok {
				out := list[:0]
				for _, item := range list {
					if ref, ok := refOf(item); ok && keep[redfish.Clean(ref)] == nil {
						continue
					}
					prune(item, keep)
					out = append(out, item)
				}
				x[k] = out
				continue
			}
			prune(e, keep)
		}
	case []any:
		for _, e := range x {
			prune(e, keep)
		}
	}
}

// refOf reports whether v is a link, {"@odata.id": URI} and nothing
// else, into this service.
func refOf(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	s, ok := m["@odata.id"].(string)
	return s, ok && strings.HasPrefix(s, redfish.Root)
}

func stripOem(doc map[string]any) {
	for _, holder := range []map[string]any{doc, asMap(doc["Links"])} {
		if holder == nil {
			continue
		}
		if oem, ok := holder["Oem"].(map[string]any); ok {
			delete(oem, "Seam")
			if len(oem) == 0 {
				delete(holder, "Oem")
			}
		}
	}
	if links := asMap(doc["Links"]); links != nil && len(links) == 0 {
		delete(doc, "Links")
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// friendlyName is what a BMC calls a resource: its model, or its kind
// and position, not seam's key.
func friendlyName(kind string, doc map[string]any) string {
	if m, ok := doc["Model"].(string); ok && m != "" {
		return m
	}
	slot := ""
	if loc := asMap(doc["Location"]); loc != nil {
		if pl := asMap(loc["PartLocation"]); pl != nil {
			if l, ok := pl["ServiceLabel"].(string); ok {
				slot = " " + l
			}
		}
	}
	names := map[string]string{"gpu": "GPU", "cpu": "CPU", "nic": "Network Adapter", "dpu": "DPU", "bmc": "BMC", "psu": "Power Supply",
		"switch-asic": "NVLink Switch", "pump": "Pump", "memory": "Memory", "drive": "Drive", "scale-up-domain": "NVLink Fabric", "cdu": "CDU"}
	if n := names[kind]; n != "" {
		return n + slot
	}
	return strings.TrimSpace(kind + slot)
}

// root writes the service root a BMC answers with, and its session
// service.
func (s *static) root(name string) {
	r := s.docs[redfish.Root]
	if r == nil {
		r = map[string]any{"@odata.id": redfish.Root + "/"}
		s.docs[redfish.Root] = r
	}
	r["@odata.type"] = "#ServiceRoot.v1_20_0.ServiceRoot"
	r["Id"], r["Name"] = "RootService", "Root Service"
	r["Product"], r["Vendor"] = "seam simulated BMC", "seam"
	r["UUID"] = uuidFor("seam simulated BMC " + name)
	r["RedfishVersion"] = redfish.RedfishVersion
	r["SessionService"] = ref(redfish.Root + "/SessionService")
	r["AccountService"] = ref(accountServiceURI)
	links := asMap(r["Links"])
	if links == nil {
		links = map[string]any{}
		r["Links"] = links
	}
	links["Sessions"] = ref(sessionsURI)
	s.docs[redfish.Root+"/SessionService"] = map[string]any{"@odata.id": redfish.Root + "/SessionService",
		"@odata.type": "#SessionService.v1_2_0.SessionService", "Id": "SessionService", "Name": "Session Service",
		"ServiceEnabled": true, "SessionTimeout": 1800, "Sessions": ref(sessionsURI),
		"Status": map[string]any{"State": "Enabled", "Health": "OK"}}
}

func ref(uri string) map[string]any { return map[string]any{"@odata.id": uri} }

// overlays adds the links to the live resources: a tray's Sensors, a
// node's Controls (its PowerLimit), its system's Reset action, each
// PSU's Metrics, a CDU's secondary coolant connectors.
func (s *static) overlays() {
	if c := s.docs[s.chassis]; c != nil {
		c["Sensors"] = ref(s.chassis + "/Sensors")
		if s.system != "" {
			c["Controls"] = ref(s.chassis + "/Controls")
		}
	}
	if sys := s.docs[s.system]; sys != nil {
		sys["Actions"] = map[string]any{"#ComputerSystem.Reset": map[string]any{"target": s.system + "/Actions/ComputerSystem.Reset",
			"ResetType@Redfish.AllowableValues": []any{"On", "ForceOff", "GracefulShutdown", "ForceRestart"}}}
	}
	for uri := range s.psus {
		s.docs[uri]["Metrics"] = ref(uri + "/Metrics")
	}
	if c := s.docs[s.cdu]; c != nil {
		c["SecondaryCoolantConnectors"] = ref(s.cdu + "/SecondaryCoolantConnectors")
		s.docs[s.cdu+"/SecondaryCoolantConnectors"] = collection(s.cdu+"/SecondaryCoolantConnectors", "CoolantConnectorCollection",
			"Secondary Coolant Connectors", s.cdu+"/SecondaryCoolantConnectors/1")
	}
}

func collection(uri, typ, name string, members ...string) map[string]any {
	list := make([]any, len(members))
	for i, m := range members {
		list[i] = ref(m)
	}
	return map[string]any{"@odata.id": uri, "@odata.type": "#" + typ + "." + typ, "Name": name, "Members": list, "Members@odata.count": len(list)}
}
