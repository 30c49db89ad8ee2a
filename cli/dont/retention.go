package main

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/dont-cli/dont/internal/errs"
	"github.com/dont-cli/dont/internal/project"
	"github.com/dont-cli/dont/internal/settings"
	"github.com/dont-cli/dont/internal/store/sqlite"
)

// retention reads how long the store keeps ended approval sessions and
// finished webhook deliveries (frame_retention, delivery_retention). Only
// a person sets them (settings.PersonOnlyEnv; the workspace config's only
// if the person trusted it): an agent that shortened them would erase the
// record of the questions it asked and of who was paged. A bad value is
// config-invalid; a config file that does not parse is the caller's to
// report, and gives none.
func (a *app) retention(p project.Project) (sqlite.Retention, error) {
	var r sqlite.Retention
	file, _ := a.projectSettings(p)
	var err error
	for _, v := range []struct {
		env, key, inFile string
		setting          settings.Duration
		dst              *time.Duration
	}{{settings.EnvFrameRetention, settings.KeyFrameRetention, file.FrameRetention, settings.FrameRetention, &r.Frames},
		{settings.EnvDeliveryRetention, settings.KeyDeliveryRetention, file.DeliveryRetention, settings.DeliveryRetention, &r.Deliveries}} {
		var d time.Duration
		switch s := a.personEnv(v.env); {
		case s != "":
			d, err = v.setting.FromEnv(v.env, s)
		case v.inFile != "":
			var ok bool
			if d, ok = v.setting.Parse(v.inFile); !ok {
				err = errs.E(errs.ConfigInvalid, v.key+" must be "+v.setting.Rule()+" (such as "+v.setting.Example+"), got "+strconv.Quote(v.inFile),
					errs.Step{Command: v.key + " = " + strconv.Quote(v.setting.Example) + "  # in your own config (dont config show)", Description: "keep it that long, or remove it to keep everything"}).
					Unmet(v.key + " is " + v.setting.Rule())
			}
		}
		if err != nil {
			return r, err
		}
		*v.dst = d
	}
	return r, nil
}

// retentionEvery is how often `dont serve` applies the retention.
const retentionEvery = 10 * time.Minute

// retentionLoop applies r at start and every retentionEvery until ctx
// ends; with no retention set it does nothing (the Idempotency-Key
// records past their window are removed by every write).
func retentionLoop(ctx context.Context, store *sqlite.Store, r sqlite.Retention, log *slog.Logger) {
	if r == (sqlite.Retention{}) {
		return
	}
	tick := time.NewTicker(retentionEvery)
	defer tick.Stop()
	for {
		if p, err := store.Prune(ctx, time.Now().UTC(), r); err != nil {
			log.Warn("retention", "error", err.Error())
		} else if p != (sqlite.Pruned{}) {
			log.Info("retention", "pruned", p)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
