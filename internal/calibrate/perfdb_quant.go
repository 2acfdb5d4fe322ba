package calibrate

import (
	"errors"
	"fmt"
	"slices"

	"github.com/servesim/servesim/internal/perf"
)

// fitFP8 fits the fp8 terms (fp8Params) of eff on the fp8 GEMM rows of
// in, every other field held; eff unchanged when in has no fp8 rows.
func fitFP8(eff perf.Efficiency, in *PerfDBInput, opt Options) (perf.Efficiency, error) {
	fp8 := in.tables[TableGEMMFP8]
	if len(fp8) == 0 {
		return eff, nil
	}
	eff.FP8Waves = opt.FP8Waves
	opt.progress(fmt.Sprintf("fitting the fp8 terms on %d of %d fp8 GEMM rows", min(len(fp8), maxDenseRows), len(fp8)))
	// The fixed terms first, then the per-element quantisation cost
	// with them: from the start values at once the simplex settles
	// in a worse minimum (H100 10.7 % against 4.8 % in two stages).
	rows := subsample(fp8, maxDenseRows)
	first, all := fp8Params[:3], fp8Params
	if in.native != nil {
		// The collection's own quantisation cost is fitted with them.
		first = append(slices.Clone(first), in.native.params()...)
		all = append(slices.Clone(all), in.native.params()...)
	}
	var err error
	if eff, _, err = fitGroup(eff, first, rows); err != nil {
		return eff, err
	}
	eff, _, err = fitGroup(eff, all, rows)
	return eff, err
}

// FitPerfDBFP8 fits only the quantised GEMM terms of base (an entry
// fitted on other tables, e.g. whole-step profiles without quantised
// rows) on the database's rows of each quantised format it has: the fp8
// W8A8 terms on the fp8 rows, the block-scaled fp8 terms on the fp8_block
// rows and the NVFP4 terms on the nvfp4 rows, every other field held, as
// FitPerfDB fits them after the bf16 terms. The returned entry is base
// with those terms, each fitted table's in-sample accuracy added to its
// fit record and FP8Source naming the tables; the report is the check of
// the whole entry on every selected row. Terms of a format without rows,
// or not in opt.QuantTables when that is set, are kept from base.
func FitPerfDBFP8(in *PerfDBInput, base *Entry, opt Options) (*Entry, *Report, error) {
	if base == nil {
		return nil, nil, errors.New("calibrate: no calibration to fit the quantised GEMM terms of")
	}
	use := func(table string) bool {
		return len(in.tables[table]) > 0 && (len(opt.QuantTables) == 0 || slices.Contains(opt.QuantTables, table))
	}
	fp8, block, fp4 := use(TableGEMMFP8), use(TableGEMMFP8Block), use(TableGEMMNVFP4)
	if !fp8 && !block && !fp4 {
		return nil, nil, fmt.Errorf("calibrate: %s has no fp8, block fp8 or nvfp4 GEMM rows for %s (no FP8 or FP4 tensor rate in the catalog?, or none of the formats asked for)", in.Source, in.Accelerator)
	}
	eff := base.Efficiency()
	if fp8 {
		eff.FP8Compute, eff.FP8QuantNs, eff.FP8Sharpness, eff.FP8QuantPsPerElem = 0, 0, 0, 0
	}
	eff.FP8Waves = opt.FP8Waves
	var err error
	if fp8 {
		if eff, err = fitFP8(eff, in, opt); err != nil {
			return nil, nil, err
		}
	}
	if block {
		eff.FP8Block = perf.ScaledGEMM{}
		if eff, err = fitScaled(eff, TableGEMMFP8Block, fp8BlockParams, in.tables[TableGEMMFP8Block], opt); err != nil {
			return nil, nil, err
		}
	}
	if fp4 {
		eff.NVFP4 = perf.ScaledGEMM{}
		if eff, err = fitScaled(eff, TableGEMMNVFP4, nvfp4Params, in.tables[TableGEMMNVFP4], opt); err != nil {
			return nil, nil, err
		}
	}
	rep, err := CheckPerfDB(eff, in)
	if err != nil {
		return nil, nil, err
	}
	fitted := NewEntry(eff, in.Source, rep)
	en := *base
	en.FP8Waves = fitted.FP8Waves
	en.Fit = map[string]FitStats{}
	for k, v := range base.Fit {
		en.Fit[k] = v
	}
	if fp8 {
		en.FP8ComputeEff, en.FP8QuantUs = fitted.FP8ComputeEff, fitted.FP8QuantUs
		en.FP8Sharpness, en.FP8QuantPsPerElem = fitted.FP8Sharpness, fitted.FP8QuantPsPerElem
		en.Fit[TableGEMMFP8] = fitted.Fit[TableGEMMFP8]
	}
	if block {
		en.FP8Block = fitted.FP8Block
		en.Fit[TableGEMMFP8Block] = fitted.Fit[TableGEMMFP8Block]
	}
	if fp4 {
		en.NVFP4 = fitted.NVFP4
		en.Fit[TableGEMMNVFP4] = fitted.Fit[TableGEMMNVFP4]
	}
	en.FP8Source = in.Source
	return &en, rep, nil
}

// fitScaled fits the GEMM terms params of a block-scaled format on its
// rows, every other term held: the fixed terms first, then the
// per-element quantisation cost with them (as for per-tensor fp8). No
// rows: eff unchanged.
func fitScaled(eff perf.Efficiency, table string, params []param, rows []sample, opt Options) (perf.Efficiency, error) {
	if len(rows) == 0 {
		return eff, nil
	}
	opt.progress(fmt.Sprintf("fitting the %s terms on %d of %d rows", table, min(len(rows), maxDenseRows), len(rows)))
	rows = subsample(rows, maxDenseRows)
	first := params[:4]
	if len(rows) > 0 && rows[0].coll.eager != nil {
		// The collection's issue time is fitted with them.
		first = append(slices.Clone(first), rows[0].coll.eager.params()...)
		params = append(slices.Clone(params), rows[0].coll.eager.params()...)
	}
	var err error
	if eff, _, err = fitGroup(eff, first, rows); err != nil {
		return eff, err
	}
	eff, _, err = fitGroup(eff, params, rows)
	return eff, err
}
