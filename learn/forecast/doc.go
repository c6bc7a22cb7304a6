// Package forecast is the Workload Predictor of DRPC (Bai et al., see
// docs/PAPERS.md; sections IV-A and V-B): multivariate time-series
// forecasting (MTFS) cast as supervised learning over sliding windows, with
// a GRU as the predictor, and the baselines and measurements that tell
// whether it is worth having. DRPC's Table 2 reports the MSE of predicted
// utilisation 5 to 25 minutes ahead.
//
// A series is series[t][k]: period t (oldest first), series k (a request
// class, a resource). Every forecaster implements Forecaster:
//
//	Predict(dst, recent)  // dst[(h-1)·Dims+k]: series k, h periods after recent's last row
//
// and allocates nothing in Predict:
//   - GRUForecaster (Fit): a GRU over the last Window periods, normalised
//     per series (mean and standard deviation, optionally of log(1+y)),
//     then a linear head to all Horizon·Dims values at once, predicting the
//     change from the newest period. Write and ReadGRUForecaster keep it in
//     a versioned file: a JSON header line (configuration, normalisation,
//     training record) and the learn/nn parameter file, like control/lb's
//     policy files, so it can be embedded in a controller's policy file.
//   - LastValue: persistence.
//   - SeasonalNaive: the value one season earlier.
//
// Evaluate scores any Forecaster on a held-out segment by rolling origin
// (every test period is an origin; each horizon compared with what
// happened) and gives MSE and MAPE per horizon and series. MAPE leaves out
// actuals below a floor, by default 5% of the series' mean over the test
// segment (see Errors).
//
// Select chooses a GRU configuration from a list of candidates using only
// the series it is given (the training part): it holds out the end of that
// series as a validation segment, fits every candidate on the periods
// before it, scores each by rolling-origin MAPE on it at the middle
// horizon, and refits the best candidate on the whole series. A test
// segment scored afterwards plays no part in the choice.
//
// Defaults (Config): Window 24, Hidden 32, Horizon 5, Epochs 20, Batch 64,
// LR 1e-3 (Adam), ClipNorm 1, every window each epoch, no validation
// hold-out, no log transform.
//
//	f, err := forecast.Fit(train, forecast.Config{Window: 60, Horizon: 25, Validation: 0.2}, rng)
//	e, err := forecast.Evaluate(f, series, len(train), 0)
//	e.MAPE(5) // percent, 5 periods ahead
//
//	sel, err := forecast.Select(train, []forecast.Config{a, b, c}, 0.2, rng)
//	e, err = forecast.Evaluate(sel.Forecaster, series, len(train), 0)
//
// # Measured on the embedded traces
//
// SHOAL_LONG=1 go test -run TestTraceForecasts -v ./learn/forecast (seed 1,
// amd64 with AVX2 and FMA, 2.5 to 3 minutes on a 2-core machine). Each
// series is split 70/30 in time. The last 30%, the test segment, is used
// once, to score the forecasters below by rolling origin; no setting is
// chosen by looking at it. SeasonalNaive's season is one day. Periods: the
// Alibaba 2018 cluster CPU (30 s points) and NASA-HTTP (per-second counts)
// averaged to 1 minute; Wikipedia hourly as it is.
//
// The GRU's settings come from Select on the first 70% alone (validation
// fraction 0.2): the last fifth of it is the validation segment, four
// candidates are fitted on the rest and scored by validation MAPE at the
// middle horizon (13 minutes ahead; 3 hours for Wikipedia), and the best
// is refitted on the whole 70%, where its own hold-out (Validation 0.2,
// the same last fifth) picks the epoch to keep. The candidates are a fixed
// grid, window × log(1+y): windows of 30 and 60 minutes for the 1-minute
// traces, of 24 and 48 hours for Wikipedia, each without and with the log
// transform. Fixed, not selected: Hidden 32, LR, Batch and ClipNorm (the
// defaults), Horizon 25 (5 for Wikipedia, the horizons reported) and two
// compute budgets carried over from an earlier version of this
// measurement: at most 30 epochs of at most 16384 random windows for the
// 1-minute traces (the window bound binds on NASA only) and at most 200
// epochs for Wikipedia. Validation MAPE in percent (* chosen):
//
//	trace            short   short+log    long    long+log   (short/long: 30/60 min, 24/48 h)
//	alibaba cpu %    12.50     11.72     11.61*    12.07
//	nasa req/s       49.97     46.66     43.98*    47.19
//	wikipedia req/s   5.03      5.02      5.00      4.93*
//
// So: Window 60 without log for Alibaba and NASA, Window 48 with log(1+y)
// for Wikipedia. On Wikipedia the four candidates are within 0.1 point of
// each other, so its choice is close to a tie. The refits kept epochs 28
// of 30, 29 of 30 and 191 of 200, close to the caps, so longer training
// might score differently; it was not tried. MAPE in percent on the test
// segment:
//
//	trace            period ahead      GRU     last seasonal
//	alibaba cpu %    1 min      1     6.26     6.48    16.98
//	alibaba cpu %    1 min      5    10.24    11.44    17.00
//	alibaba cpu %    1 min     25    12.49    14.57    17.05
//	nasa req/s       1 min      1    40.73    45.30    68.98
//	nasa req/s       1 min      5    47.75    55.31    68.98
//	nasa req/s       1 min     25    47.88    58.84    68.99
//	wikipedia req/s  1 h        1     3.78     5.27     9.53
//	wikipedia req/s  1 h        5     5.70    15.69     9.63
//
// The GRU beats both baselines on every trace and horizon, by little one
// period ahead on Alibaba (6.26 against 6.48) and by most on Wikipedia five
// hours ahead (5.70 against 15.69). NASA's minutes hold about 40 requests
// on average and far fewer at night, so counting noise alone keeps every
// MAPE there high; 123 of 25300 test minutes fall below the floor.
//
// Multivariate: the traces carry no per-request-class series (DRPC drives
// its four TrainTicket user types from one trace in a mix), so the
// multivariate case is the Alibaba CPU and memory utilisation pair, as
// fractions, at DRPC's 5-minute scheduling interval (horizons 1-5 = 5-25
// minutes): one GRU for both series with DefaultConfig's Window 24, Hidden
// 32 and Horizon 5 (not selected; there is no Select here) and Wikipedia's
// budget of at most 200 epochs, the hold-out (Validation 0.2) keeping epoch
// 42. MAPE in percent, MSE in squared fractions:
//
//	series min     GRU %   last %  seas. %     GRU MSE  last MSE seas. MSE
//	cpu       5     7.72     8.15    15.35    0.001582  0.001802  0.006267
//	cpu      10     9.26    10.03    15.37    0.002293  0.002771  0.006276
//	cpu      15    10.01    10.85    15.38    0.002634  0.003260  0.006284
//	cpu      20    10.63    11.77    15.39    0.002890  0.003751  0.006293
//	cpu      25    10.76    12.12    15.41    0.003113  0.004054  0.006302
//	mem       5     1.03     1.07     2.60    0.000150  0.000168  0.000880
//	mem      10     1.31     1.38     2.60    0.000241  0.000297  0.000881
//	mem      15     1.39     1.55     2.60    0.000266  0.000354  0.000882
//	mem      20     1.47     1.69     2.61    0.000294  0.000411  0.000884
//	mem      25     1.51     1.77     2.61    0.000307  0.000439  0.000885
//
// The CPU MSE (0.0016-0.0031) is of the order of Table 2's 0.0025-0.0057,
// but the two are not comparable: the paper does not give its split or
// aggregation, and this series is the mean over all machines, smoother than
// any one machine.
//
// Not built: DRPC's LSTM alternative, exogenous inputs (time of day,
// calendar), per-machine series and retraining while deployed.
package forecast
