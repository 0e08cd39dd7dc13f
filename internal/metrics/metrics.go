// Package metrics exposes runblock's Prometheus metrics: runs by outcome, run
// durations, queue depth, rate limiting, sessions and adapter traffic.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcomes are the values of the outcome label of runblock_runs_total.
var Outcomes = []string{"ok", "error", "timeout", "memory", "output_limit", "rejected"}

// Platforms are the values of the platform label of the adapter metrics.
var Platforms = []string{"console", "slack", "discord"}

// Registry records runblock's metrics. It implements executor.Metrics
// and the adapters' Metrics interfaces. The zero value is not usable; call New.
type Registry struct {
	reg         *prometheus.Registry
	runs        *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	queueDepth  prometheus.Gauge
	rateLimited prometheus.Counter
	received    *prometheus.CounterVec
	replied     *prometheus.CounterVec
	reconnects  *prometheus.CounterVec
	sessions    prometheus.Gauge
	cells       prometheus.Counter
	replays     *prometheus.CounterVec
	replayed    prometheus.Counter
	evictions   *prometheus.CounterVec
}

// ReplayOutcomes and EvictionReasons are the values of the labels of
// runblock_session_replays_total and runblock_session_evictions_total.
var (
	ReplayOutcomes  = []string{"restored", "fresh"}
	EvictionReasons = []string{"idle", "count", "memory"}
)

// New returns a Registry with every metric registered, plus the Go runtime
// and process collectors.
func New() *Registry {
	r := &Registry{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runblock_runs_total",
			Help: "Snippet runs by outcome (ok, error, timeout, memory, output_limit; rejected: refused by the scheduler).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "runblock_run_duration_seconds",
			Help:    "Wall time of snippet runs, by outcome (rejections are not observed).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"outcome"}),
		queueDepth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runblock_queue_depth",
			Help: "Jobs waiting in the scheduler's queue.",
		}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runblock_rate_limited_total",
			Help: "Submissions refused by a per-user rate or job limit.",
		}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runblock_messages_received_total",
			Help: "Messages an adapter picked up as a run request, by platform.",
		}, []string{"platform"}),
		replied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runblock_messages_replied_total",
			Help: "Replies an adapter delivered, by platform.",
		}, []string{"platform"}),
		reconnects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runblock_reconnects_total",
			Help: "Reconnections of an adapter's connection, by platform.",
		}, []string{"platform"}),
		sessions: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "runblock_sessions_live",
			Help: "Sessions with a live process.",
		}),
		cells: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runblock_session_cells_total",
			Help: "Cells run in sessions.",
		}),
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runblock_session_replays_total",
			Help: "Rebuilds of a session's state by replaying its earlier cells, by outcome (restored; fresh: it failed or passed its budget).",
		}, []string{"outcome"}),
		replayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "runblock_session_replayed_cells_total",
			Help: "Cells replayed to rebuild sessions.",
		}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "runblock_session_evictions_total",
			Help: "Live session processes ended to free room or for idleness, by reason (idle, count, memory).",
		}, []string{"reason"}),
	}
	r.reg.MustRegister(r.runs, r.duration, r.queueDepth, r.rateLimited, r.received, r.replied, r.reconnects,
		r.sessions, r.cells, r.replays, r.replayed, r.evictions,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	for _, o := range Outcomes {
		r.runs.WithLabelValues(o)
	}
	for _, o := range ReplayOutcomes {
		r.replays.WithLabelValues(o)
	}
	for _, e := range EvictionReasons {
		r.evictions.WithLabelValues(e)
	}
	for _, p := range Platforms {
		r.received.WithLabelValues(p)
		r.replied.WithLabelValues(p)
		r.reconnects.WithLabelValues(p)
	}
	return r
}

// RunFinished counts a run (or a rejection) and observes its duration.
func (r *Registry) RunFinished(outcome string, d time.Duration) {
	r.runs.WithLabelValues(outcome).Inc()
	if outcome != "rejected" {
		r.duration.WithLabelValues(outcome).Observe(d.Seconds())
	}
}

// QueueDepth sets the current queue depth.
func (r *Registry) QueueDepth(n int) { r.queueDepth.Set(float64(n)) }

// RateLimited counts a per-user rate-limit refusal.
func (r *Registry) RateLimited() { r.rateLimited.Inc() }

// MessageReceived counts a message an adapter will answer.
func (r *Registry) MessageReceived(platform string) { r.received.WithLabelValues(platform).Inc() }

// MessageReplied counts a reply an adapter delivered.
func (r *Registry) MessageReplied(platform string) { r.replied.WithLabelValues(platform).Inc() }

// Reconnected counts a reconnection of an adapter.
func (r *Registry) Reconnected(platform string) { r.reconnects.WithLabelValues(platform).Inc() }

// SessionsLive sets the number of live sessions.
func (r *Registry) SessionsLive(n int) { r.sessions.Set(float64(n)) }

// SessionCell counts a cell run in a session.
func (r *Registry) SessionCell() { r.cells.Inc() }

// SessionReplay counts a rebuild of a session's state and the cells it
// replayed.
func (r *Registry) SessionReplay(outcome string, cells int) {
	r.replays.WithLabelValues(outcome).Inc()
	r.replayed.Add(float64(cells))
}

// SessionEvicted counts a live session ended to free room or for idleness.
func (r *Registry) SessionEvicted(reason string) { r.evictions.WithLabelValues(reason).Inc() }

// Handler serves the metrics in the Prometheus exposition format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}
