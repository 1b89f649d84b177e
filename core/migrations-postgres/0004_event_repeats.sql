-- A payload stored packed (`store::packed`): the ranges that repeat earlier bytes of it (a
-- diff's new text, nearly its old text) are left out of `payload`, and this says where to copy
-- them back from. NULL: the payload is whole.
ALTER TABLE events ADD COLUMN repeats TEXT;
