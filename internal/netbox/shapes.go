// Package netbox moves the as-built inventory between seam and NetBox:
// it imports racks, devices, power panels, power feeds and cables from
// an export of NetBox's REST API (the paginated JSON of dcim/racks,
// dcim/devices, dcim/power-panels, dcim/power-feeds and dcim/cables)
// into the per-rack handover form the inventory reads, and exports the
// inventory back as NetBox-shaped JSON.
//
// The shapes are NetBox 4.x's, as its DCIM serializers write them
// (netbox/dcim/api/serializers_/{racks,devices,power,cables}.py and
// netbox/api/serializers/generic.py of netbox-community/netbox, main
// branch as read in 2026; older 4.x releases may lack a device's oob_ip
// or a cable end's object):
// nested objects in their brief form ({id, url, display, name, …}),
// choices as {value, label}, cable ends as {object_type, object_id,
// object}. What NetBox has no field for (a tray's firmware, its parts'
// serials, the seam module of a rack) travels in custom fields named
// seam_*. No NetBox server runs in the tests: the fixtures are written
// from those serializers' documented shapes.
package netbox

import "encoding/json"

// Endpoints are the API endpoints an export holds, in the order they
// are read: a file DIR/ENDPOINT.json each (dcim-racks.json…), further
// pages DIR/ENDPOINT.2.json, DIR/ENDPOINT.3.json, ….
var Endpoints = []string{"dcim/racks", "dcim/devices", "dcim/power-panels", "dcim/power-feeds", "dcim/cables"}

// Page is one page of a list endpoint.
type Page[T any] struct {
	Count    int     `json:"count"`
	Next     *string `json:"next"`
	Previous *string `json:"previous"`
	Results  []T     `json:"results"`
}

// Brief is a nested object in its brief form.
type Brief struct {
	ID      int    `json:"id"`
	URL     string `json:"url,omitempty"`
	Display string `json:"display,omitempty"`
	Name    string `json:"name,omitempty"`
	Slug    string `json:"slug,omitempty"`
}

// DeviceBrief is a nested device: its name may be null.
type DeviceBrief struct {
	ID      int     `json:"id"`
	URL     string  `json:"url,omitempty"`
	Display string  `json:"display,omitempty"`
	Name    *string `json:"name"`
}

// Choice is a choice field: {value, label}.
type Choice struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// CustomFields are an object's custom fields.
type CustomFields map[string]json.RawMessage

// Rack is a dcim/racks result.
type Rack struct {
	ID           int          `json:"id"`
	URL          string       `json:"url,omitempty"`
	Display      string       `json:"display,omitempty"`
	Name         string       `json:"name"`
	FacilityID   *string      `json:"facility_id"`
	Site         Brief        `json:"site"`
	Location     *Brief       `json:"location"`
	Status       *Choice      `json:"status,omitempty"`
	Serial       string       `json:"serial"`
	AssetTag     *string      `json:"asset_tag"`
	CustomFields CustomFields `json:"custom_fields"`
}

// DeviceType is a nested device type.
type DeviceType struct {
	ID           int    `json:"id"`
	URL          string `json:"url,omitempty"`
	Display      string `json:"display,omitempty"`
	Manufacturer Brief  `json:"manufacturer"`
	Model        string `json:"model"`
	Slug         string `json:"slug"`
}

// IPBrief is a nested IP address.
type IPBrief struct {
	ID      int    `json:"id"`
	URL     string `json:"url,omitempty"`
	Display string `json:"display,omitempty"`
	Address string `json:"address"`
}

// Device is a dcim/devices result.
type Device struct {
	ID           int          `json:"id"`
	URL          string       `json:"url,omitempty"`
	Display      string       `json:"display,omitempty"`
	Name         *string      `json:"name"`
	DeviceType   DeviceType   `json:"device_type"`
	Role         Brief        `json:"role"`
	Serial       string       `json:"serial"`
	AssetTag     *string      `json:"asset_tag"`
	Site         Brief        `json:"site"`
	Rack         *Brief       `json:"rack"`
	Position     *float64     `json:"position"`
	Face         *Choice      `json:"face"`
	Status       *Choice      `json:"status,omitempty"`
	OOBIP        *IPBrief     `json:"oob_ip"`
	CustomFields CustomFields `json:"custom_fields"`
}

// PowerPanel is a dcim/power-panels result.
type PowerPanel struct {
	ID           int          `json:"id"`
	URL          string       `json:"url,omitempty"`
	Display      string       `json:"display,omitempty"`
	Site         Brief        `json:"site"`
	Name         string       `json:"name"`
	CustomFields CustomFields `json:"custom_fields"`
}

// PowerFeed is a dcim/power-feeds result.
type PowerFeed struct {
	ID           int          `json:"id"`
	URL          string       `json:"url,omitempty"`
	Display      string       `json:"display,omitempty"`
	PowerPanel   Brief        `json:"power_panel"`
	Rack         *Brief       `json:"rack"`
	Name         string       `json:"name"`
	Status       Choice       `json:"status"`
	Type         Choice       `json:"type"`
	Supply       Choice       `json:"supply"`
	Phase        Choice       `json:"phase"`
	Voltage      *int         `json:"voltage"`
	Amperage     *int         `json:"amperage"`
	CustomFields CustomFields `json:"custom_fields"`
}

// Termination is one end of a cable: a generic object.
type Termination struct {
	ID         int        `json:"id,omitempty"`
	ObjectType string     `json:"object_type"`
	ObjectID   int        `json:"object_id"`
	Object     *Interface `json:"object,omitempty"`
}

// Interface is a nested interface (a cable's termination object).
type Interface struct {
	ID      int         `json:"id"`
	URL     string      `json:"url,omitempty"`
	Display string      `json:"display,omitempty"`
	Device  DeviceBrief `json:"device"`
	Name    string      `json:"name"`
}

// Cable is a dcim/cables result.
type Cable struct {
	ID            int           `json:"id"`
	URL           string        `json:"url,omitempty"`
	Display       string        `json:"display,omitempty"`
	Type          string        `json:"type"`
	ATerminations []Termination `json:"a_terminations"`
	BTerminations []Termination `json:"b_terminations"`
	Status        Choice        `json:"status"`
	Label         string        `json:"label"`
	CustomFields  CustomFields  `json:"custom_fields"`
}

// Export is a NetBox export: every result of each endpoint.
type Export struct {
	Racks       []Rack
	Devices     []Device
	PowerPanels []PowerPanel
	PowerFeeds  []PowerFeed
	Cables      []Cable
}
