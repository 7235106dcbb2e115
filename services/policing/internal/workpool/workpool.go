// Package workpool runs the requests of the policing servers, RADIUS's and Diameter's, on
// goroutines that live on between requests: a new goroutine per request grew its stack anew
// each time (newstack and copystack were a tenth of the Gx CPU). Each worker keeps a value of
// its own between jobs (RADIUS: the memory its requests are parsed into). What each protocol
// needs is a parameter: RADIUS a fixed number of workers behind a bounded queue (handlers
// that wait on a remote store need many in flight; past the queue the kernel's socket buffer
// holds the excess), Diameter workers started on demand, bounded by its connections' windows
// and diameter.maxInFlight.
package workpool

import (
	"sync"
	"time"
)

// Options size a pool.
type Options struct {
	// Workers are started by New and serve until Close (radius.workers). 0: a job that finds
	// no idle worker starts one, which ends after Idle without work.
	Workers int
	// Queue is how many jobs wait for a worker (radius.queueSize); with Workers 0 it is
	// unused: a job goes to an idle worker or a new one.
	Queue int
	// Idle is how long an on-demand worker waits for a job before it ends; 0: 10 s.
	Idle time.Duration
}

// Pool serves jobs J with serve, each worker passing its own W.
type Pool[J, W any] struct {
	opt   Options
	work  chan J
	serve func(w *W, j J)
	wg    sync.WaitGroup
}

// New starts the pool's fixed workers, if any.
func New[J, W any](opt Options, serve func(w *W, j J)) *Pool[J, W] {
	if opt.Idle <= 0 {
		opt.Idle = 10 * time.Second
	}
	p := &Pool[J, W]{opt: opt, serve: serve}
	if opt.Workers <= 0 {
		p.work = make(chan J) // unbuffered: a send succeeds only when a worker waits
		return p
	}
	p.work = make(chan J, opt.Queue)
	p.wg.Add(opt.Workers)
	for range opt.Workers {
		go p.fixed()
	}
	return p
}

// Submit hands j to the pool. With fixed workers it waits for room in the queue until stop
// closes, and reports false when j was not taken; on demand, j goes to an idle worker or a
// new one, and is always taken.
func (p *Pool[J, W]) Submit(j J, stop <-chan struct{}) bool {
	if p.opt.Workers <= 0 {
		select {
		case p.work <- j:
		default:
			p.wg.Add(1)
			go p.onDemand(j)
		}
		return true
	}
	select {
	case p.work <- j:
		return true
	case <-stop:
		return false
	}
}

// Close lets the fixed workers end once the queue is served; no Submit may follow. Wait
// waits for them.
func (p *Pool[J, W]) Close() { close(p.work) }

// Wait waits for the workers that run.
func (p *Pool[J, W]) Wait() { p.wg.Wait() }

func (p *Pool[J, W]) fixed() {
	defer p.wg.Done()
	var w W
	for j := range p.work {
		p.serve(&w, j)
	}
}

func (p *Pool[J, W]) onDemand(j J) {
	defer p.wg.Done()
	var w W
	idle := time.NewTimer(p.opt.Idle)
	defer idle.Stop()
	for {
		p.serve(&w, j)
		idle.Reset(p.opt.Idle)
		select {
		case j = <-p.work:
		case <-idle.C:
			return
		}
	}
}
