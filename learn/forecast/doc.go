// Package forecast is DRPC's Workload Predictor (section V-B).
package forecast
