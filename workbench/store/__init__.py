"""What survives a run: the content-addressed result store of sweep points
(:mod:`~workbench.store.result_store`) and its audit and repair
(:mod:`~workbench.store.audit`), self-describing netCDF result files
(:mod:`~workbench.store.netcdf`), atomic writes with named failures
(:mod:`~workbench.store.atomic`) and figures drawn once per content
(:mod:`~workbench.store.figure_cache`)."""
