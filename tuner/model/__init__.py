"""What a kernel should cost before it runs: device rates, the analytic cost model, the roofline."""
