"""As strict as Kueue's Configuration loader: fields, sections, feature gates, deviceClassMappings, start-up rules."""
