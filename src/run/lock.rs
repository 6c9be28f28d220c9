//! One orchestrator drives a project at a time: an flock on `.automaton/lock`.
