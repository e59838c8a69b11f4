// Package redfish is the inventory as a Redfish service: Export writes
// the graph as a tree of Redfish resources by URI (Chassis with their
// ContainedBy, Contains, PoweredBy, CooledBy and ManagedBy links,
// ComputerSystems, Managers, PowerEquipment, ThermalEquipment, Fabrics,
// Facilities, FirmwareInventory), a Tree's Handler serves it read-only
// over HTTP, WriteDir and ReadDir keep it as a tall mockup directory, and
// Import reads a tree — seam's own, DMTF's mockups, a service fetched
// over HTTP — back into a graph, reporting every problem with the URI
// and file it is in. FORMAT.md is the mapping. The Tree and its Handler
// serve any documents, so a simulated BMC can serve through them too.
package redfish
