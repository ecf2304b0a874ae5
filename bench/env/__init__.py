"""The machine and process a run happens in: device placement, the hardware fingerprint, loaded plugins."""
