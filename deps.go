//go:build deps

// This file pins modules that packages import only as they are built
// issue by issue, so that `go mod tidy` keeps the versions the project
// chose (see docs/decisions.md).
package seam

import (
	_ "github.com/gosnmp/gosnmp"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
	_ "github.com/simonvetter/modbus"
	_ "github.com/slayercat/GoSNMPServer"
	_ "golang.org/x/crypto/ssh"
)
