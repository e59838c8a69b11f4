package contractc

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/seamdc/seam/internal/cli"
	"github.com/seamdc/seam/internal/clock"
	"github.com/seamdc/seam/internal/contract"
	"github.com/seamdc/seam/internal/diag"
	"github.com/seamdc/seam/internal/redfish"
	"github.com/seamdc/seam/internal/redfish/bmchttp"
)

func init() {
	register("redfish", "the inventory as a Redfish service: serve it, export it, or import a Redfish tree", runRedfish).
		WithExample("contractc redfish contracts/examples/threemodule --export redfish")
}

func runRedfish(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("DIR [--inventory FILE]… (--serve ADDR | --export OUTDIR)  |  --import DIR|URL [--format F] [--timeout D]", flag.ContinueOnError)
	serve := fs.String("serve", "", "serve the export read-only over HTTP at ADDR (host:port; port 0 picks one) until interrupted")
	export := fs.String("export", "", "write the export to OUTDIR/redfish/v1 (a tall mockup tree, index.json per resource; replaces OUTDIR/redfish)")
	imp := fs.String("import", "", "read a Redfish tree, a mockup directory or an http(s) URL of a service, and print what it holds")
	format := fs.String("format", "text", "--import's output: "+strings.Join(redfish.Formats, ", "))
	timeout := fs.Duration("timeout", 10*time.Second, "--import from a URL: each request's limit (connecting, TLS, the answer)")
	inv := inventoryFlag(fs)
	pos, err := cli.Parse(fs, args)
	switch {
	case err != nil:
	case *imp != "" && (len(pos) > 0 || *serve != "" || *export != "" || len(*inv) > 0):
		err = cli.Usagef("--import reads a tree: it takes no contract directory, --serve, --export or --inventory")
	case *timeout <= 0:
		err = cli.Usagef("--timeout %s: want a positive duration", *timeout)
	case *imp != "":
	case len(pos) != 1:
		err = cli.Usagef("want one contract directory, got %d arguments", len(pos))
	case (*serve == "") == (*export == ""):
		err = cli.Usagef("want one of --serve ADDR and --export OUTDIR")
	}
	if err != nil {
		return fail(stderr, "redfish", fs, err)
	}
	if *imp != "" {
		return redfishImport(*imp, *format, *timeout, stdout, stderr, fs)
	}
	tree, code := redfishExport(pos[0], inv.paths(), stderr)
	if tree == nil {
		return code
	}
	if *export != "" {
		if err := writeExport(tree, *export); err != nil {
			return fail(stderr, "redfish", fs, err)
		}
		fmt.Fprintf(stdout, "wrote %s: %s\n", filepath.Join(*export, "redfish", "v1"), tree.Summary())
		return cli.ExitOK
	}
	if err := serveTree(tree, *serve, stdout); err != nil {
		return fail(stderr, "redfish", fs, err)
	}
	return cli.ExitOK
}

// redfishExport builds the inventory graph of a contract directory and
// exports it; findings stop it with their exit code.
func redfishExport(dir string, paths []string, stderr io.Writer) (*redfish.Tree, int) {
	c, diags, err := contract.Load(dir)
	if err == nil && c != nil {
		var hd diag.List
		hd, err = c.ReadInventory(paths)
		diags = append(diags, hd...)
	}
	if err != nil {
		fmt.Fprintf(stderr, "contractc redfish: %v\n", err)
		return nil, cli.ExitTool
	}
	if c != nil && diags.Count(diag.Error) == 0 {
		g, gd := c.Graph()
		if diags = append(diags, gd...); diags.Count(diag.Error) == 0 {
			if len(diags) > 0 {
				diag.Text(stderr, diags.Sorted().Rebase(cli.RelDir(dir)))
			}
			return redfish.Export(g), cli.ExitOK
		}
	}
	diag.Text(stderr, diags.Sorted().Rebase(cli.RelDir(dir)))
	fmt.Fprintln(stderr, "contractc redfish: the inventory has errors: nothing exported (contractc vet says more)")
	return nil, cli.ExitFindings
}

// writeExport writes the tree to out/redfish, replacing what an earlier
// export left there.
func writeExport(tree *redfish.Tree, out string) error {
	if err := os.RemoveAll(filepath.Join(out, "redfish")); err != nil {
		return err
	}
	return tree.WriteDir(out)
}

// serveTree serves the tree at addr until SIGINT or SIGTERM.
func serveTree(tree *redfish.Tree, addr string, stdout io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: tree.Handler(), ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "serving %s at http://%s%s/ (read-only; interrupt to stop)\n", tree.Summary(), ln.Addr(), redfish.Root)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil {
		return err
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// redfishImport reads a tree and prints what it holds: exit 2 when the
// tree has problems. A service is read with seam's BMC client (no proxy,
// as many connections as the fetch has requests in flight), each
// request bounded by timeout.
func redfishImport(src, format string, timeout time.Duration, stdout, stderr io.Writer, fs *flag.FlagSet) int {
	if format != "text" && format != "json" {
		return fail(stderr, "redfish", fs, cli.Usagef("--format: want %s, got %q", strings.Join(redfish.Formats, " or "), format))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client, closeIdle := bmchttp.New(bmchttp.Options{PerBMC: redfish.FetchParallel, Timeout: timeout, Clock: clock.Real{}})
	defer closeIdle()
	tree, err := redfish.Load(ctx, src, client)
	if err != nil {
		return fail(stderr, "redfish", fs, err)
	}
	_, rep := redfish.Import(tree, src)
	if err := rep.Write(stdout, format); err != nil {
		return fail(stderr, "redfish", fs, err)
	}
	if !rep.OK() {
		return cli.ExitFindings
	}
	return cli.ExitOK
}
