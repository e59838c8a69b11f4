package inventory

// Rule ids of the inventory's checks (contractc vet reports them with
// the contract's own).
const (
	RuleNoPower        = "INV002"
	RuleBusbarPSU      = "INV003"
	RuleBusbarShelf    = "INV004"
	RuleBusbarFeed     = "INV005"
	RuleNotCooled      = "INV006"
	RuleBMCOffMgmt     = "INV007"
	RuleBMCOnData      = "INV008"
	RuleSerial         = "INV009"
	RuleAssetTag       = "INV010"
	RuleSlot           = "INV011"
	RuleDomainModules  = "INV012"
	RuleDomainDeclared = "INV013"
	RuleCounts         = "INV014"
	RuleUnknownRef     = "INV015"
	RuleWrongFeedLoop  = "INV016"
	RuleSlurmName      = "INV017"
	RuleKubeName       = "INV018"
	RuleAsBuilt        = "INV019"
	RuleDesignRef      = "INV020"
	RuleShelfFeeds     = "INV021"
	RuleDataOnMgmt     = "INV022"
	RuleBMCAddress     = "INV023"
	RuleBMCName        = "INV024"
	RulePort           = "INV025"
	RuleDesignPower    = "INV026"
	RuleNodeName       = "INV027"
)

// Rules describes the inventory's rule ids.
var Rules = map[string]string{
	RuleNoPower:         "a node or switch with no power path to a feed",
	RuleBusbarPSU:       "a rack's busbar load that does not fit with one PSU lost, or with none lost (the finest loss a rack cannot take is the one reported)",
	RuleBusbarShelf:     "a rack's busbar load that no longer fits with one power shelf lost",
	RuleBusbarFeed:      "a rack's busbar load that no longer fits with one feed lost (the shelves on the other feed alone)",
	RuleNotCooled:       "a liquid-cooled tray on no loop",
	RuleBMCOffMgmt:      "a BMC not cabled to the management network",
	RuleBMCOnData:       "a BMC cabled to the data network",
	RuleSerial:          "one serial on two parts",
	RuleAssetTag:        "one asset tag on two things",
	RuleSlot:            "two things in one U slot or one rack position, or a tray outside the rack",
	RuleDomainModules:   "a scale-up domain that spans modules",
	RuleDomainDeclared:  "a scale-up domain the contract does not declare, or one the as-built splits",
	RuleCounts:          "nodes, GPUs, PSUs or part serials that disagree between the rack design, the site contract and the handover",
	RuleUnknownRef:      "a handover record naming a site, module, rack, PDU, power block or cooling loop that does not exist",
	RuleWrongFeedLoop:   "a handover record naming the wrong power block or cooling loop for its rack",
	RuleSlurmName:       "two nodes with one Slurm name",
	RuleKubeName:        "two nodes with one Kubernetes name",
	RuleAsBuilt:         "an as-built tray where the design has none, or of another kind, or trays of a rack that has no design",
	RuleDesignRef:       "a rack naming a rack design its module does not have",
	RuleShelfFeeds:      "power shelves whose feeds are not one rack PDU per shelf",
	RuleDataOnMgmt:      "a tray's data NICs cabled to the management switch",
	RuleBMCAddress:      "a BMC address that is not an IP address, or one address on two BMCs",
	RuleBMCName:         "two BMCs with one host name",
	RulePort:            "two cables in one port of a data or management switch",
	RuleDesignPower:     "a rack's design power below the design draw of its trays",
	RuleNodeName:        "a node name its scheduler cannot take (Slurm's host lists, Kubernetes' RFC 1123 names), or a rack name Slurm cannot take for its leaf switch",
	RuleHandoverSyntax:  "a handover file that is not JSON",
	RuleHandoverField:   "a handover field the format does not know, or a value of the wrong type or kind",
	RuleHandoverFormat:  "a handover file of another format, or of none",
	RuleHandoverMissing: "a handover record without a field it needs (a node's node, module or rack; a rack's name or module; a tray's slot or kind)",
}
