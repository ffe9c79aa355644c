
Ba_zero_pointJ