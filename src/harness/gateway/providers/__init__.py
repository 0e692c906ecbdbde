"""Model providers; each module wraps one vendor SDK and is imported only when used."""
