package contractc

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/netbox"
)

func init() {
	register("netbox", "NetBox: export the inventory as NetBox's API pages, or import a NetBox export into a handover file", runNetbox).
		WithExample("contractc netbox export contracts/examples/threemodule -o nb --limit 1000")
}

func runNetbox(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("export DIR [--inventory FILE]… -o OUTDIR [--base-url URL] [--limit N]  |  import NETBOXDIR -o FILE [--contracts DIR]", flag.ContinueOnError)
	out := fs.String("o", "", "export: the directory of the API pages (dcim-racks.json, dcim-devices.json, …); import: the handover file to write")
	base := fs.String("base-url", netbox.DefaultBaseURL, "export: the API root the objects' url fields name")
	limit := fs.Int("limit", 1000, "export: results a page, as NetBox's ?limit=")
	contracts := fs.String("contracts", "", "import: check the handover file against this contract directory (its inventory joins)")
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case len(pos) != 2 || (pos[0] != "export" && pos[0] != "import"):
		err = cli.Usagef("want export DIR or import NETBOXDIR")
	case *out == "":
		err = cli.Usagef("-o: where to write")
	case pos[0] == "import" && len(*inv) > 0:
		err = cli.Usagef("--inventory is export's: import reads a NetBox export")
	case *limit < 1:
		err = cli.Usagef("--limit %d: one or more results a page", *limit)
	}
	if err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	if pos[0] == "export" {
		return netboxExport(pos[1], inv.paths(), *out, *base, *limit, stdout, stderr, fs)
	}
	return netboxImport(pos[1], *out, *contracts, stdout, stderr, fs)
}

func netboxExport(dir string, paths []string, out, base string, limit int, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	c, diags, err := contract.Load(dir)
	if err == nil && c != nil {
		var hd diag.List
		hd, err = c.ReadInventory(paths)
		diags = append(diags, hd...)
	}
	if err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	g, gd := c.Graph()
	if diags = append(diags, gd...); diags.Count(diag.Error) > 0 {
		diag.Text(stderr, diags.Sorted().Rebase(cli.RelDir(dir)))
		fmt.Fprintln(stderr, "contractc netbox: the inventory has errors: nothing exported (contractc vet says more)")
		return cli.ExitFindings
	}
	site, err := netbox.FromInventory(g, c.Handovers)
	if err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	e, err := netbox.ExportSite(site, base)
	if err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	if err := netbox.WriteDir(out, e, base, limit); err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d racks, %d devices, %d cables, %d power panels, %d power feeds\n",
		out, len(e.Racks), len(e.Devices), len(e.Cables), len(e.PowerPanels), len(e.PowerFeeds))
	return cli.ExitOK
}

func netboxImport(dir, out, contracts string, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	e, err := netbox.ReadDir(dir)
	if err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	site, err := netbox.ImportSite(e)
	if err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	if err := os.WriteFile(out, site.Handover(), 0o644); err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	trays := 0
	for _, r := range site.Racks {
		trays += len(r.Trays)
	}
	fmt.Fprintf(stdout, "wrote %s: site %s, %d racks, %d trays (%d power feeds read: the handover form has none)\n", out, site.Name, len(site.Racks), trays, len(site.Feeds))
	if contracts == "" {
		return cli.ExitOK
	}
	c, diags, err := contract.Load(contracts)
	if err == nil && c != nil {
		var hd diag.List
		hd, err = c.ReadInventory([]string{out})
		diags = append(diags, hd...)
	}
	if err != nil {
		return fail(stderr, "netbox", fs, err)
	}
	_, gd := c.Graph()
	if diags = append(diags, gd...); len(diags) > 0 {
		diag.Text(stderr, diags.Sorted().Rebase(cli.RelDir(contracts)))
	}
	if diags.Count(diag.Error) > 0 {
		fmt.Fprintf(stderr, "contractc netbox: %s does not join the contracts of %s\n", out, contracts)
		return cli.ExitFindings
	}
	fmt.Fprintf(stdout, "%s joins the contracts of %s\n", out, contracts)
	return cli.ExitOK
}
