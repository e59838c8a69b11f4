package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/scheduler"
)

// Scontrol runs Slurm's scontrol; scheduler.Slurm, the one Slurm
// client, is one (a dry run's records what would change instead of
// running it).
type Scontrol interface {
	Scontrol(ctx context.Context, args ...string) ([]byte, error)
}

// ApplyOptions say how to apply a plan.
type ApplyOptions struct {
	// Now is the time reservations are made at (zero: time.Now): a
	// window over is skipped, one on already is reserved from the next
	// minute to its end.
	Now time.Time
	// Location is the controller's time zone, in which scontrol reads and
	// writes times (nil: time.Local).
	Location *time.Location
	// DryRun reads Slurm and says what would change, changing nothing.
	DryRun bool
	Log    *slog.Logger
}

// Actions on a reservation.
const (
	Created   = "created"
	Updated   = "updated"
	Unchanged = "unchanged"
	Past      = "past"
	WouldMake = "would create"
	WouldEdit = "would update"
)

// Result is what Apply did.
type Result struct {
	Applied []Applied `json:"reservations"`
	// Stale are seam's reservations in Slurm that no window plans (a
	// window removed from the calendar): left alone, named.
	Stale []string `json:"stale"`
}

// Crossing counts the running jobs that cross a window.
func (r Result) Crossing() int {
	n := 0
	for _, a := range r.Applied {
		n += len(a.Crossing)
	}
	return n
}

// Applied is one reservation: what Apply did, what Slurm reads back,
// and the jobs running on its nodes past its start.
type Applied struct {
	Window   string            `json:"window"`
	Name     string            `json:"name"`
	Action   string            `json:"action"`
	Command  []string          `json:"command,omitempty"` // the scontrol arguments run (or, dry, to run)
	Slurm    *SlurmReservation `json:"slurm,omitempty"`
	Crossing []Job             `json:"crossing_jobs"`
}

// SlurmReservation is a reservation as scontrol shows it.
type SlurmReservation = scheduler.Reservation

// Job is a running job as scontrol shows it.
type Job struct {
	ID    string    `json:"id"`
	Name  string    `json:"name"`
	User  string    `json:"user"`
	End   time.Time `json:"end"`
	Nodes string    `json:"nodes"`
}

// slurmTime is how scontrol writes times: local, to the second.
const slurmTime = scheduler.SlurmTime

// Args are the scontrol arguments that create r, in loc.
func (r *Reservation) Args(loc *time.Location) []string {
	return []string{"create", "reservation", "reservationname=" + r.Name, "starttime=" + r.Start.In(loc).Format(slurmTime),
		"duration=" + strconv.Itoa(r.Minutes), "nodes=" + r.Hostlist, "flags=" + strings.ToLower(strings.Join(r.Flags, ",")), "users=" + r.Users}
}

// Apply makes each window's reservation in Slurm (creates it, or updates
// one that differs), reads it back and checks it, and lists the jobs
// that run on its nodes past its start. Errors name the reservation
// and say what Slurm answered.
func Apply(ctx context.Context, s Scontrol, p Plan, o ApplyOptions) (Result, error) {
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	have, err := readReservations(ctx, s, o.Location)
	if err != nil {
		return Result{}, err
	}
	jobs, err := readJobs(ctx, s, o.Location)
	if err != nil {
		return Result{}, err
	}
	res := Result{Applied: []Applied{}, Stale: []string{}}
	planned := map[string]bool{}
	for _, w := range p.Windows {
		if w.Reservation == nil {
			continue
		}
		r := *w.Reservation
		planned[r.Name] = true
		a := Applied{Window: w.ID, Name: r.Name, Crossing: []Job{}}
		if !r.End().After(o.Now) {
			a.Action = Past
			res.Applied = append(res.Applied, a)
			continue
		}
		cur := have[r.Name]
		if r.Start.Before(o.Now) { // on already
			end := r.End()
			start := o.Now.Truncate(time.Minute).Add(time.Minute) // from the next minute
			if cur != nil && !cur.Start.After(o.Now) {
				start = cur.Start // on in Slurm too: keep its start
			}
			r.Start, r.Duration = start, end.Sub(start)
			r.Minutes = int(r.Duration / time.Minute)
		}
		a.Action, a.Command = plan(&r, cur, o.Location)
		log := log.With("reservation", r.Name, "window", w.ID)
		if a.Command != nil && !o.DryRun {
			log.Info("scontrol", "args", strings.Join(a.Command, " "))
			if out, err := s.Scontrol(ctx, a.Command...); err != nil {
				return res, fmt.Errorf("reservation %s for window %s: %w (scontrol said: %s)", r.Name, w.ID, err, strings.TrimSpace(string(out)))
			}
			back, err := readReservations(ctx, s, o.Location)
			if err != nil {
				return res, err
			}
			if cur = back[r.Name]; cur == nil {
				return res, fmt.Errorf("reservation %s for window %s: scontrol accepted it, but scontrol show reservation does not list it", r.Name, w.ID)
			}
			if diff := differs(&r, cur); diff != "" {
				return res, fmt.Errorf("reservation %s for window %s: Slurm reads back %s: delete it (scontrol delete reservation %s) and apply again", r.Name, w.ID, diff, r.Name)
			}
		} else if o.DryRun && a.Command != nil {
			a.Action = map[string]string{Created: WouldMake, Updated: WouldEdit}[a.Action]
		}
		a.Slurm = cur
		a.Crossing = crossing(jobs, &r)
		log.Info("reservation", "action", a.Action, "crossing_jobs", len(a.Crossing))
		res.Applied = append(res.Applied, a)
	}
	for name := range have {
		if strings.HasPrefix(name, Prefix) && !planned[name] {
			res.Stale = append(res.Stale, name)
		}
	}
	slices.Sort(res.Stale)
	return res, nil
}

// plan is what to do about r given what Slurm has: create, update or
// nothing, and the scontrol arguments.
func plan(r *Reservation, cur *SlurmReservation, loc *time.Location) (string, []string) {
	if cur == nil {
		return Created, r.Args(loc)
	}
	if differs(r, cur) == "" {
		return Unchanged, nil
	}
	return Updated, []string{"update", "reservationname=" + r.Name, "starttime=" + r.Start.In(loc).Format(slurmTime),
		"duration=" + strconv.Itoa(r.Minutes), "nodes=" + r.Hostlist}
}

// differs says how Slurm's reservation differs from r ("" the same).
func differs(r *Reservation, cur *SlurmReservation) string {
	var d []string
	if !cur.Start.Equal(r.Start) {
		d = append(d, fmt.Sprintf("start %s, not %s", cur.Start.Format(slurmTime), r.Start.In(cur.Start.Location()).Format(slurmTime)))
	}
	if !cur.End.Equal(r.End()) {
		d = append(d, fmt.Sprintf("end %s, not %s", cur.End.Format(slurmTime), r.End().In(cur.End.Location()).Format(slurmTime)))
	}
	if !slices.Equal(cur.Nodes, r.Nodes) {
		d = append(d, fmt.Sprintf("nodes %s, not %s", cur.Hostlist, r.Hostlist))
	}
	for _, f := range r.Flags {
		if !slices.Contains(cur.Flags, f) {
			d = append(d, "flags "+strings.Join(cur.Flags, ",")+" without "+f)
		}
	}
	return strings.Join(d, "; ")
}

// crossing are the running jobs on r's nodes that end after it starts.
func crossing(jobs []scheduler.RunningJob, r *Reservation) []Job {
	out := []Job{}
	for _, j := range jobs {
		if !j.End.After(r.Start) {
			continue
		}
		for _, n := range j.Nodes {
			if _, ok := slices.BinarySearch(r.Nodes, n); ok {
				out = append(out, Job{ID: j.ID, Name: j.Name, User: j.User, End: j.End, Nodes: j.NodeList})
				break
			}
		}
	}
	return out
}

// readReservations runs scontrol -o show reservation and parses every
// reservation it lists, by name.
func readReservations(ctx context.Context, s Scontrol, loc *time.Location) (map[string]*SlurmReservation, error) {
	out, err := s.Scontrol(ctx, "-o", "show", "reservation")
	if err != nil {
		return nil, fmt.Errorf("reading Slurm's reservations: %w", err)
	}
	return scheduler.ParseReservations(string(out), loc)
}

func readJobs(ctx context.Context, s Scontrol, loc *time.Location) ([]scheduler.RunningJob, error) {
	out, err := s.Scontrol(ctx, "-o", "show", "jobs")
	if err != nil {
		return nil, fmt.Errorf("reading Slurm's jobs: %w", err)
	}
	return scheduler.ParseJobs(string(out), loc)
}
