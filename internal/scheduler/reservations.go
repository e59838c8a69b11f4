package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seamdc/seam/internal/topology/hostlist"
)

// SlurmTime is how scontrol writes and reads times: the controller's
// local time, to the second.
const SlurmTime = "2006-01-02T15:04:05"

// Reservation is a reservation as scontrol shows it.
type Reservation struct {
	Name     string    `json:"name"`
	Start    time.Time `json:"start"`
	End      time.Time `json:"end"`
	Nodes    []string  `json:"nodes"`
	Hostlist string    `json:"hostlist"`
	Flags    []string  `json:"flags"`
	State    string    `json:"state"`
}

// ParseReservations reads scontrol -o show reservation, times in loc,
// by name.
func ParseReservations(out string, loc *time.Location) (map[string]*Reservation, error) {
	rs := map[string]*Reservation{}
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "No reservations") {
			continue
		}
		f, err := ParseKV(line)
		if err != nil {
			return nil, fmt.Errorf("scontrol show reservation, line %d: %w", n+1, err)
		}
		r := &Reservation{Name: f.Get("ReservationName"), State: f.Get("State"), Hostlist: f.Get("Nodes"), Flags: strings.Split(f.Get("Flags"), ",")}
		if r.Name == "" {
			return nil, fmt.Errorf("scontrol show reservation, line %d: no ReservationName in %q", n+1, line)
		}
		if r.Start, err = time.ParseInLocation(SlurmTime, f.Get("StartTime"), loc); err != nil {
			return nil, fmt.Errorf("scontrol show reservation, line %d (%s): StartTime: %w", n+1, r.Name, err)
		}
		if r.End, err = time.ParseInLocation(SlurmTime, f.Get("EndTime"), loc); err != nil {
			return nil, fmt.Errorf("scontrol show reservation, line %d (%s): EndTime: %w", n+1, r.Name, err)
		}
		if Null(r.Hostlist) != "" {
			if r.Nodes, err = hostlist.Expand(r.Hostlist); err != nil {
				return nil, fmt.Errorf("scontrol show reservation, line %d (%s): Nodes: %w", n+1, r.Name, err)
			}
			slices.Sort(r.Nodes)
		}
		rs[r.Name] = r
	}
	return rs, nil
}

// RunningJob is a running job as scontrol -o show jobs shows it, its
// nodes expanded.
type RunningJob struct {
	ID       string    `json:"id"`
	Name     string    `json:"name"`
	User     string    `json:"user"`
	End      time.Time `json:"end"` // far in the future for a job without a time limit
	NodeList string    `json:"nodes"`
	Nodes    []string  `json:"-"`
}

// ParseJobs reads the running jobs of scontrol -o show jobs, times in
// loc.
func ParseJobs(out string, loc *time.Location) ([]RunningJob, error) {
	var jobs []RunningJob
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "No jobs") {
			continue
		}
		f, err := ParseKV(line)
		if err != nil {
			return nil, fmt.Errorf("scontrol show jobs, line %d: %w", n+1, err)
		}
		if f.Get("JobState") != "RUNNING" {
			continue
		}
		j := RunningJob{ID: f.Get("JobId"), Name: f.Get("JobName"), User: f.Get("UserId"), NodeList: f.Get("NodeList")}
		if e, err := time.ParseInLocation(SlurmTime, f.Get("EndTime"), loc); err == nil {
			j.End = e
		} else {
			j.End = time.Unix(1<<40, 0) // Unknown: a job with no time limit runs past everything
		}
		if j.Nodes, err = hostlist.Expand(j.NodeList); err != nil {
			return nil, fmt.Errorf("scontrol show jobs, line %d (job %s): NodeList: %w", n+1, j.ID, err)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// NodeState is a node as scontrol -o show node shows it.
type NodeState struct {
	Name string
	// State is scontrol's, flags and all: IDLE+DRAIN, DOWN*+NOT_RESPONDING…
	State  string
	Reason string
}

// ParseNodes reads scontrol -o show node, by name.
func ParseNodes(out string) (map[string]NodeState, error) {
	nodes := map[string]NodeState{}
	for n, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		f, err := ParseKV(line)
		if err != nil {
			return nil, fmt.Errorf("scontrol show node, line %d: %w", n+1, err)
		}
		name := f.Get("NodeName")
		if name == "" {
			continue
		}
		nodes[name] = NodeState{Name: name, State: f.Get("State"), Reason: Null(f.Get("Reason"))}
	}
	return nodes, nil
}

// Reservations runs scontrol -o show reservation, times in loc.
func (s *Slurm) Reservations(ctx context.Context, loc *time.Location) (map[string]*Reservation, error) {
	out, err := s.Scontrol(ctx, "-o", "show", "reservation")
	if err != nil {
		return nil, fmt.Errorf("reading Slurm's reservations: %w", err)
	}
	return ParseReservations(string(out), loc)
}

// RunningJobs runs scontrol -o show jobs, times in loc.
func (s *Slurm) RunningJobs(ctx context.Context, loc *time.Location) ([]RunningJob, error) {
	out, err := s.Scontrol(ctx, "-o", "show", "jobs")
	if err != nil {
		return nil, fmt.Errorf("reading Slurm's jobs: %w", err)
	}
	return ParseJobs(string(out), loc)
}

// Nodes runs scontrol -o show node for names.
func (s *Slurm) Nodes(ctx context.Context, names []string) (map[string]NodeState, error) {
	out, err := s.Scontrol(ctx, "-o", "show", "node", hostlist.Compress(names))
	if err != nil {
		return nil, err
	}
	return ParseNodes(string(out))
}

// Reserve creates a reservation over nodes for user, starting now,
// with flags (MAINT,IGNORE_JOBS for a burn-in).
func (s *Slurm) Reserve(ctx context.Context, name, user string, nodes []string, flags string) error {
	list := hostlist.Compress(nodes)
	if _, err := s.Scontrol(ctx, "create", "reservation", "ReservationName="+name, "StartTime=now", "Duration=UNLIMITED",
		"Users="+user, "Nodes="+list, "Flags="+flags); err != nil {
		return fmt.Errorf("reservation %s on %s: %w", name, list, err)
	}
	return nil
}

// Unreserve deletes a reservation.
func (s *Slurm) Unreserve(ctx context.Context, name string) error {
	if _, err := s.Scontrol(ctx, "delete", "ReservationName="+name); err != nil {
		return fmt.Errorf("reservation %s: %w", name, err)
	}
	return nil
}
