-- The browser a device signed in with (its User-Agent, at most 512 characters), so the account page
-- can show "Chrome on macOS" instead of an id. Null for devices seen before this column.
ALTER TABLE devices ADD COLUMN user_agent TEXT;
