package cluster

import (
	"sort"
	"sync"
)

// DestroyHook is what a package that keeps side state of a cluster outside its servers
// (links: impairments standing on the hosts; knob: a pending restore of server settings)
// needs before the store destroys or forgets the cluster. Every path that destroys (the
// CLI's destroy and destroy --all, a sweep forgetting a cluster it registered for the
// run) goes through Store.Destroy or DestroyAll, which run the hooks first.
type DestroyHook struct {
	// Name says whose hook it is ("knob", "links"); hooks run in the order of their names.
	Name string
	// Refuse says why c must not go (a non-nil error, the destroy's error: one line naming
	// the cluster and what to run first), with no side effect; nil lets it go. DestroyAll
	// asks every hook about every cluster before it changes anything.
	Refuse func(c *Cluster) error
	// Before undoes the side state on c before it goes; an error keeps c (its state
	// directory and servers) and is the destroy's error. Nil: nothing to undo.
	Before func(c *Cluster) error
}

var destroyHooks struct {
	sync.Mutex
	list []DestroyHook
}

// RegisterDestroyHook adds h (from an init function of the package that owns the side
// state). Hooks with a name already registered replace it.
func RegisterDestroyHook(h DestroyHook) {
	destroyHooks.Lock()
	defer destroyHooks.Unlock()
	for i, o := range destroyHooks.list {
		if o.Name == h.Name {
			destroyHooks.list[i] = h
			return
		}
	}
	destroyHooks.list = append(destroyHooks.list, h)
	sort.Slice(destroyHooks.list, func(i, j int) bool { return destroyHooks.list[i].Name < destroyHooks.list[j].Name })
}

func registeredDestroyHooks() []DestroyHook {
	destroyHooks.Lock()
	defer destroyHooks.Unlock()
	return append([]DestroyHook(nil), destroyHooks.list...)
}

// refuseDestroy returns the first refusal of any hook for any of cs (nil: all may go).
func refuseDestroy(cs []*Cluster) error {
	hooks := registeredDestroyHooks()
	for _, c := range cs {
		for _, h := range hooks {
			if h.Refuse == nil {
				continue
			}
			if err := h.Refuse(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// beforeDestroy runs every hook's Before on c; the first error stops it and is returned.
func beforeDestroy(c *Cluster) error {
	for _, h := range registeredDestroyHooks() {
		if h.Before == nil {
			continue
		}
		if err := h.Before(c); err != nil {
			return err
		}
	}
	return nil
}

// DestroyRefusal returns what the registered destroy hooks refuse for c, nil when it may
// go; no side effect (Store.Destroy asks the same first).
func DestroyRefusal(c *Cluster) error { return refuseDestroy([]*Cluster{c}) }

// PrepareDestroy runs the registered destroy hooks' undoing on c, as Store.Destroy does
// before the provider's destroy; an error means c must be kept.
func PrepareDestroy(c *Cluster) error { return beforeDestroy(c) }
