package redfish

// The Redfish schema versions the export claims: the versions of DMTF's
// 2025.x bundles that DMTF's own mockups (shared/samples/redfish) and
// gofish v0.23.0 use. Every property the export writes exists in the
// version it names.
var odataType = map[string]string{
	"ServiceRoot":       "#ServiceRoot.v1_20_0.ServiceRoot",
	"Chassis":           "#Chassis.v1_28_0.Chassis",
	"ComputerSystem":    "#ComputerSystem.v1_27_0.ComputerSystem",
	"Manager":           "#Manager.v1_24_0.Manager",
	"Facility":          "#Facility.v1_4_2.Facility",
	"PowerSubsystem":    "#PowerSubsystem.v1_1_3.PowerSubsystem",
	"PowerSupply":       "#PowerSupply.v1_6_0.PowerSupply",
	"PowerEquipment":    "#PowerEquipment.v1_2_3.PowerEquipment",
	"PowerDistribution": "#PowerDistribution.v1_6_0.PowerDistribution",
	"Circuit":           "#Circuit.v1_9_0.Circuit",
	"ThermalEquipment":  "#ThermalEquipment.v1_2_0.ThermalEquipment",
	"CoolingUnit":       "#CoolingUnit.v1_5_0.CoolingUnit",
	"CoolingLoop":       "#CoolingLoop.v1_1_0.CoolingLoop",
	"Pump":              "#Pump.v1_2_0.Pump",
	"Processor":         "#Processor.v1_22_0.Processor",
	"Memory":            "#Memory.v1_23_0.Memory",
	"NetworkAdapter":    "#NetworkAdapter.v1_14_0.NetworkAdapter",
	"Drive":             "#Drive.v1_22_0.Drive",
	"Fabric":            "#Fabric.v1_4_0.Fabric",
	"Switch":            "#Switch.v1_11_0.Switch",
	"UpdateService":     "#UpdateService.v1_17_0.UpdateService",
	"SoftwareInventory": "#SoftwareInventory.v1_13_0.SoftwareInventory",
}

// collectionType is the @odata.type of a collection of members of type.
var collectionType = map[string]string{
	"Chassis":           "ChassisCollection",
	"ComputerSystem":    "ComputerSystemCollection",
	"Manager":           "ManagerCollection",
	"Facility":          "FacilityCollection",
	"PowerSupply":       "PowerSupplyCollection",
	"PowerDistribution": "PowerDistributionCollection",
	"Circuit":           "CircuitCollection",
	"CoolingUnit":       "CoolingUnitCollection",
	"CoolingLoop":       "CoolingLoopCollection",
	"Pump":              "PumpCollection",
	"Processor":         "ProcessorCollection",
	"Memory":            "MemoryCollection",
	"NetworkAdapter":    "NetworkAdapterCollection",
	"Drive":             "DriveCollection",
	"Fabric":            "FabricCollection",
	"Switch":            "SwitchCollection",
	"SoftwareInventory": "SoftwareInventoryCollection",
}

// caps is which of an element's fields a resource type has a standard
// property for; the others go to Oem.Seam.
type caps struct {
	assetTag, ids, location, height bool
	power                           string // the property that holds PowerW
}

var capsOf = map[string]caps{
	"Chassis":           {assetTag: true, ids: true, location: true, height: true, power: "MaxPowerWatts"},
	"PowerSupply":       {ids: true, location: true, power: "PowerCapacityWatts"},
	"PowerDistribution": {assetTag: true, ids: true, location: true},
	"CoolingUnit":       {assetTag: true, ids: true, location: true, power: "CoolingCapacityWatts"},
	"Pump":              {assetTag: true, ids: true, location: true},
	"Processor":         {ids: true, location: true},
	"Memory":            {ids: true, location: true},
	"NetworkAdapter":    {ids: true, location: true},
	"Drive":             {assetTag: true, ids: true, location: true},
	"Manager":           {ids: true, location: true},
	"Switch":            {assetTag: true, ids: true, location: true},
	// Facility, Circuit, CoolingLoop, Fabric: none
}

// managedTypes have a standard Links.ManagedBy.
var managedTypes = map[string]bool{"Chassis": true, "PowerDistribution": true, "CoolingUnit": true, "CoolingLoop": true,
	"Switch": true, "Fabric": true, "Facility": true}
